#!/usr/bin/env bash
# Benchmark: llmload's memory over a long open-loop run.
#
#   scripts/bench-memory.sh [SECONDS=3600] [RATE=100] [OUTPUT_TOKENS=256]
#
# Builds in release mode and starts `llmload sim --schedule fixed:ttft_ms=50,itl_ms=2` (each
# request streams its tokens on an exact timeline, so about RATE × 0.56 s requests are in flight
# at 256 tokens). Runs a Poisson open loop at RATE requests/s for SECONDS with 128-token prompts
# and OUTPUT_TOKENS-token answers, one token per event, reads llmload's resident set size
# (VmRSS) every 10 s, and prints it with the requests ended so far, its peak over the whole run
# (from /usr/bin/time, so the end of the run is in it), then the growth per hour fitted
# (least squares) over the second half of the run, when start-up and the histograms' first fill
# are over. Then rebuilds the attempt's report from its records (`llmload report`) and prints
# that command's peak RSS next to the size of requests.jsonl. Prints figures; asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-3600}"
rate="${2:-100}"
output="${3:-256}"

cargo build --release --quiet -p llmload --bin llmload
bin="$PWD/target/release/llmload"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
work="$(mktemp -d)"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT

"$bin" sim --port 0 --profile cpu-tiny --schedule fixed:ttft_ms=50,itl_ms=2 >"$work/sim.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on" "$work/sim.log" && break; sleep 0.05; done
url="$(sed -n 's|^listening on ||p' "$work/sim.log")"
[ -n "$url" ] || { echo "the simulator did not start: $(cat "$work/sim.log")" >&2; exit 1; }

/usr/bin/time -f "%M" -o "$work/run.time" "$bin" run --url "$url" --arrival poisson \
  --rate "$rate" --duration "${seconds}s" --warmup 0 --input-tokens 128 --output-tokens "$output" \
  --telemetry off --seed 1 --out "$work" --name memory -q >"$work/run.log" 2>&1 &
timer=$!
pids+=($timer)
for _ in $(seq 100); do run="$(pgrep -P "$timer" || true)"; [ -n "$run" ] && break; sleep 0.05; done
[ -n "$run" ] || { echo "llmload did not start: $(cat "$work/run.log")" >&2; exit 1; }
echo "llmload $("$bin" --version | awk '{print $2}'): Poisson arrivals at $rate/s for ${seconds}s, 128-token prompts, $output tokens each (fixed schedule: 50 ms to the first token, 2 ms between tokens)"
printf '%8s %10s %12s\n' "time (s)" "RSS (MiB)" "requests"
samples="$work/rss.tsv"
start=$(date +%s)
while kill -0 "$run" 2>/dev/null; do
  rss_kb="$(awk '/^VmRSS/ {print $2}' "/proc/$run/status" 2>/dev/null || true)"
  [ -n "$rss_kb" ] || break
  t=$(($(date +%s) - start))
  requests="$( (cat "$work"/memory/*/requests.jsonl 2>/dev/null || true) | wc -l)"
  printf '%8d %10.1f %12d\n' "$t" "$(awk -v k="$rss_kb" 'BEGIN {print k / 1024}')" "$requests"
  printf '%d\t%d\n' "$t" "$rss_kb" >>"$samples"
  sleep 10
done
wait "$timer" || true
echo "peak RSS over the whole run (end of run and report.html included): $(awk '{printf "%.1f MiB", $1 / 1024}' "$work/run.time")"
attempt="$(ls -d "$work"/memory/*/ | head -1)"
/usr/bin/time -f "%M %e" -o "$work/report.time" "$bin" report "$attempt" >"$work/report.log" 2>&1 ||
  echo "llmload report failed: $(tail -1 "$work/report.log")"
python3 - "$samples" "$work" <<'PY'
import glob, json, os, sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
half = [r for r in rows if r[0] >= rows[-1][0] / 2]
if len(half) >= 3:
    n = len(half)
    mt = sum(t for t, _ in half) / n
    mr = sum(r for _, r in half) / n
    slope = sum((t - mt) * (r - mr) for t, r in half) / sum((t - mt) ** 2 for t, _ in half)
    print(f"growth over the second half ({n} readings): {slope * 3600 / 1024:+.1f} MiB per hour; "
          f"peak RSS {max(r for _, r in rows) / 1024:.1f} MiB")
records = glob.glob(sys.argv[2] + "/memory/*/requests.jsonl")
timing = open(sys.argv[2] + "/report.time").read().split()
if records and len(timing) >= 2:
    size = os.path.getsize(records[0]) / 2**20
    print(f"llmload report on it: peak RSS {int(timing[-2]) / 1024:.1f} MiB for a "
          f"{size:,.0f} MiB requests.jsonl, {float(timing[-1]):.0f} s")
summary = glob.glob(sys.argv[2] + "/memory/*/summary.json")
if summary:
    case = json.load(open(summary[0]))["cases"][0]
    itl = case.get("itl_ms") or {}
    print(f"requests ok: {case['counts']['ok']}; ITL samples: {itl.get('n', 0)} "
          f"({'histogram, within ' + str(itl['relative_error'] * 100) + ' %' if itl.get('relative_error') else 'exact'})")
PY
