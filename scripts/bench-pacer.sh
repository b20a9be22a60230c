#!/usr/bin/env bash
# Benchmark: the open-loop pacer's send lag (sent − scheduled) on this machine.
#
#   scripts/bench-pacer.sh [SECONDS=5] [RATES="100 500 2000"]
#
# Builds in release mode, starts `llmload sim --profile cpu-tiny` with enough slots that the
# server never queues, then runs a Poisson open loop at each rate for SECONDS with 16-token
# prompts and 4 output tokens, and prints the send lag p50/p99/max from each summary.json, the
# achieved rate and the coefficient of variation of the gaps between sends (1 for Poisson), both
# from the records' sent times. `scripts/bench-pacer.sh 20 500` makes 10,000 arrivals.
# Prints figures; asserts nothing (the bar: p99 ≤ 1 ms at 500 requests/s).
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
printf '%-14s %-9s %-12s %-12s %-12s %-16s %-14s %s\n' "rate (req/s)" "requests" "lag p50" "lag p99" \
  "lag max" "in flight (mean)" "achieved rate" "CV of send gaps"
for rate in $rates; do
  target/release/llmload run --url "$url" --arrival poisson --rate "$rate" --duration "${seconds}s" \
    --input-tokens 16 --output-tokens 4 --telemetry off --seed 1 --out "$out" --name "r$rate" -q \
    >/dev/null 2>&1 || true
  attempt="$(ls -d "$out/r$rate"/*/ | head -1)"
  python3 - "$attempt" "$rate" <<'PY'
import json, sys
load = json.load(open(sys.argv[1] + "summary.json"))["cases"][0]["load"]
lag = load["send_lag_ms"]
sent = sorted(r["sent_s"] for r in map(json.loads, open(sys.argv[1] + "requests.jsonl"))
              if r["phase"] == "measured")
gaps = [b - a for a, b in zip(sent, sent[1:])]
mean = sum(gaps) / len(gaps)
cv = (sum((g - mean) ** 2 for g in gaps) / len(gaps)) ** 0.5 / mean
print(f"{sys.argv[2]:<14} {lag['n']:<9} {lag['median']:<9.3f} ms {lag['p99']:<9.3f} ms "
      f"{lag['max']:<9.3f} ms {load['achieved_concurrency_mean']:<16.2f} {1 / mean:<8.1f} /s   {cv:.3f}")
PY
done
