#!/usr/bin/env bash
# Benchmark: what llmload itself costs, against a simulator that costs nothing.
#
#   scripts/bench-client.sh [--peer guidellm|aiperf] [--quick]
#
# Builds in release mode and starts `llmload sim --schedule zero-cost` (every token at once, one
# SSE event per write) pinned to one core with taskset, llmload pinned to the other. For the
# completions and chat APIs at concurrency 1, 64, 1,024 and 10,000 (128-token prompts, 256-token
# answers, one token per event) it prints llmload's CPU time (user + sys of the process, from
# /usr/bin/time) per token event (from requests.jsonl, warmups included), token events per
# second over the measured rounds, peak RSS, and RSS per in-flight stream (peak RSS above the
# concurrency-1 run, divided by the concurrency). Then, against `--schedule fixed` (first token
# exactly 100 ms after the request, then one every 20 ms), it prints llmload's TTFT and ITL
# bias (measured − scheduled) at concurrency 1, 1,000 and 10,000 (the last with a 200 ms gap, so
# that the one-core simulator keeps its schedule).
#
# --peer installs that Python client (pip, into a virtualenv under ~/.cache/llmload/) and runs it
# on the same workload against the same simulator, printing its CPU per token event and TTFT
# bias next to llmload's. --quick runs fewer rounds. Prints figures; asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

peer=""
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --peer) peer="${2:?--peer takes guidellm or aiperf}"; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "usage: $0 [--peer guidellm|aiperf] [--quick]" >&2; exit 2 ;;
  esac
done
case "$peer" in ""|guidellm|aiperf) ;; *) echo "--peer: guidellm or aiperf, not $peer" >&2; exit 2 ;; esac
[ "$(nproc)" -ge 2 ] || { echo "needs two CPUs (one for the simulator, one for llmload)" >&2; exit 1; }

cargo build --release --quiet -p llmload --bin llmload
bin="$PWD/target/release/llmload"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
work="$(mktemp -d)"
sim_pid=""
stop_sim() {
  if [ -n "$sim_pid" ]; then kill "$sim_pid" 2>/dev/null || true; wait "$sim_pid" 2>/dev/null || true; fi
  sim_pid=""
}
trap 'stop_sim; rm -rf "$work"' EXIT

# Starts the simulator on CPU 1 with this schedule; sets $url.
start_sim() {
  stop_sim
  taskset -c 1 "$bin" sim --port 0 --profile cpu-tiny --schedule "$1" >"$work/sim.log" 2>&1 &
  sim_pid=$!
  for _ in $(seq 100); do grep -q "listening on" "$work/sim.log" && break; sleep 0.05; done
  url="$(sed -n 's|^listening on ||p' "$work/sim.log")"
  [ -n "$url" ] || { echo "the simulator did not start: $(cat "$work/sim.log")" >&2; exit 1; }
}

# Runs llmload on CPU 0: NAME API CONCURRENCY ROUNDS OUTPUT_TOKENS; leaves NAME.time, NAME/.
run_llmload() {
  local name="$1" api="$2" concurrency="$3" rounds="$4" output="$5"
  /usr/bin/time -f "%U %S %M" -o "$work/$name.time" taskset -c 0 "$bin" run --url "$url" \
    --api "$api" --concurrency "$concurrency" --rounds "$rounds" --warmup 1 --input-tokens 128 \
    --output-tokens "$output" --timeout 600s --telemetry off --seed 1 --out "$work" --name "$name" \
    -q >/dev/null 2>"$work/$name.err" || true
}

# Prints one row of the zero-cost table: NAME API CONCURRENCY [BASE_RSS_KB].
zero_cost_row() {
  python3 - "$work/$1" "$work/$1.time" "$2" "$3" "${4:-}" <<'PY'
import glob, json, sys
folder, timing, api, concurrency, base = sys.argv[1:6]
user, sys_s, rss_kb = open(timing).read().split()[-3:]
cpu = float(user) + float(sys_s)
records = [json.loads(l) for f in glob.glob(folder + "/*/requests.jsonl") for l in open(f) if l.strip()]
events = sum(r["token_events"] for r in records)
measured = [r for r in records if r["phase"] == "measured"]
ok = sum(r["status"] == "ok" for r in measured)
span = max(r["done_s"] or r["sent_s"] for r in measured) - min(r["sent_s"] for r in measured)
per_stream = "–"
if base:
    per_stream = f"{(int(rss_kb) - int(base)) / max(int(concurrency) - 1, 1):.1f} KiB"
print(f"{api:<12} {concurrency:>6} {ok:>7} {events:>10} {cpu * 1e6 / max(events, 1):>9.2f} µs "
      f"{events / span if span > 0 else 0:>12,.0f} {int(rss_kb) / 1024:>9.1f} MiB {per_stream:>12}")
PY
}

# Prints TTFT and ITL bias against the fixed schedule: NAME CONCURRENCY TTFT_MS ITL_MS.
bias_row() {
  python3 - "$work/$1" "$2" "$3" "$4" <<'PY'
import glob, json, sys
folder, concurrency, ttft, itl = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
records = [json.loads(l) for f in glob.glob(folder + "/*/requests.jsonl") for l in open(f) if l.strip()]
ok = [r for r in records if r["phase"] == "measured" and r["status"] == "ok"]
def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")
t = [r["ttft_ms"] - ttft for r in ok]
g = [b - a - itl for r in ok for a, b in zip(r["event_ms"], r["event_ms"][1:])]
print(f"{concurrency:>6} {len(ok):>6} {ttft:>6.0f}/{itl:<4.0f} {pct(t, .5):>9.3f} {pct(t, .99):>9.3f} "
      f"{pct(g, .5):>9.3f} {pct(g, .99):>9.3f}   (ms)")
PY
}

echo "llmload $("$bin" --version | awk '{print $2}') on $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "Zero-cost simulator on CPU 1, llmload on CPU 0; 128-token prompts, 256 tokens per answer, one token per event."
printf '%-12s %6s %7s %10s %12s %12s %13s %12s\n' api concurrency "ok" "events" "CPU/event" "events/s" "peak RSS" "RSS/stream"
start_sim zero-cost
for api in completions chat; do
  base=""
  for concurrency in 1 64 1024 10000; do
    case "$concurrency" in
      1) rounds=$((quick ? 20 : 200)) ;;
      64) rounds=$((quick ? 10 : 20)) ;;
      *) rounds=1 ;;
    esac
    name="zc-$api-$concurrency"
    run_llmload "$name" "$api" "$concurrency" "$rounds" 256
    zero_cost_row "$name" "$api" "$concurrency" "$base"
    [ -n "$base" ] || base="$(awk '{print $3}' "$work/$name.time")"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "Fixed-schedule simulator (scheduled TTFT/ITL shown); completions API, 128-token prompts."
printf '%6s %6s %11s %9s %9s %9s %9s\n' concurrency ok schedule "TTFT p50" "TTFT p99" "ITL p50" "ITL p99"
for spec in "1 20 32 100 20" "1000 1 32 100 20" "10000 1 8 100 200"; do
  read -r concurrency rounds output ttft itl <<<"$spec"
  start_sim "fixed:ttft_ms=$ttft,itl_ms=$itl"
  name="fixed-$concurrency"
  run_llmload "$name" completions "$concurrency" "$rounds" "$output"
  bias_row "$name" "$concurrency" "$ttft" "$itl"
done
echo "bias = measured − scheduled; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

[ -n "$peer" ] || exit 0
run_peer() { echo "peer $1: not yet"; }
echo
run_peer "$peer"
