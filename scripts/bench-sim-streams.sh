#!/usr/bin/env bash
# Benchmark: the simulator holding many concurrent streams on this machine.
#
#   scripts/bench-sim-streams.sh [STREAMS=10000] [OUTPUT_TOKENS=64]
#
# Builds in release mode, starts `llmload sim --profile cpu-tiny` with one slot per stream (so
# every stream decodes at once), opens STREAMS streaming requests at the same moment with the
# simulator crate's raw-socket stress client, and prints how many completed, the wall time, the
# first-token spread and the simulator's peak resident memory. Prints figures; asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
streams="${1:-10000}"
output_tokens="${2:-64}"
# The engine model at 10,000 running sequences is slow in modelled time; run it faster.
time_scale="${TIME_SCALE:-100}"

cargo build --release --quiet -p llmload --bin llmload
cargo build --release --quiet -p llmload-sim --example stress
ulimit -n "$((streams * 2 + 1024))" 2>/dev/null || ulimit -n "$(ulimit -Hn)"

log="$(mktemp)"
timeout 600 target/release/llmload sim --port 0 --profile cpu-tiny --slots "$streams" --time-scale "$time_scale" >"$log" &
sim=$!
trap 'kill $sim 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 50); do grep -q "listening on" "$log" && break; sleep 0.1; done
address="$(sed -n 's|^listening on http://||p' "$log")"
[ -n "$address" ] || { echo "the simulator did not start" >&2; exit 1; }
sim_pid="$(pgrep -P "$sim" llmload || echo "$sim")"

echo "simulator at $address (cpu-tiny, $streams slots, time scale $time_scale); $streams streams × $output_tokens tokens"
target/release/examples/stress "$address" "$streams" "$output_tokens" 2>&1 | uniq -c | sed "s/^ *1 //"
echo "simulator peak RSS: $(awk '/VmHWM/ {printf "%.0f MiB", $2 / 1024}' "/proc/$sim_pid/status")"
