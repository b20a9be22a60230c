#!/usr/bin/env bash
# Benchmark: the open-loop pacer's send lag (sent − scheduled) on this machine.
#
#   scripts/bench-pacer.sh [SECONDS=5] [RATES="100 500 2000"]
#
# Builds in release mode, starts `llmload sim --profile cpu-tiny` with enough slots that the
# server never queues, then runs a Poisson open loop at each rate for SECONDS with 16-token
# prompts and 4 output tokens, and prints the send lag p50/p99/max from each summary.json.
# Prints figures; asserts nothing (the issue's bar: p99 ≤ 1 ms at 500 requests/s).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-5}"
rates="${2:-100 500 2000}"

cargo build --release --quiet -p llmload --bin llmload
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
out="$(mktemp -d)"
log="$out/sim.log"
timeout 900 target/release/llmload sim --port 0 --profile cpu-tiny --slots 4096 >"$log" &
sim=$!
trap 'kill $sim 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 50); do grep -q "listening on" "$log" && break; sleep 0.1; done
url="$(sed -n 's|^listening on ||p' "$log")"
[ -n "$url" ] || { echo "the simulator did not start" >&2; exit 1; }

echo "simulator at $url (cpu-tiny, 4096 slots); Poisson arrivals for ${seconds}s each; $(nproc) CPUs"
printf '%-14s %-9s %-12s %-12s %-12s %-16s\n' "rate (req/s)" "requests" "lag p50" "lag p99" "lag max" "in flight (mean)"
for rate in $rates; do
  target/release/llmload run --url "$url" --arrival poisson --rate "$rate" --duration "${seconds}s" \
    --input-tokens 16 --output-tokens 4 --telemetry off --seed 1 --out "$out" --name "r$rate" -q \
    >/dev/null 2>&1 || true
  summary="$(ls -d "$out/r$rate"/*/ | head -1)summary.json"
  python3 - "$summary" "$rate" <<'PY'
import json, sys
load = json.load(open(sys.argv[1]))["cases"][0]["load"]
lag = load["send_lag_ms"]
print(f"{sys.argv[2]:<14} {lag['n']:<9} {lag['median']:<9.3f} ms {lag['p99']:<9.3f} ms "
      f"{lag['max']:<9.3f} ms {load['achieved_concurrency_mean']:.2f}")
PY
done
