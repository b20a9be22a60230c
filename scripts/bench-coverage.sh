#!/usr/bin/env bash
# Coverage of the confidence intervals: how often the 95 % interval of a small attempt holds the
# simulator's true figure.
#
#   scripts/bench-coverage.sh
#
# The truth: the built-in simulator (engine profile, step jitter on) at one load, measured once
# at length (COVERAGE_REFERENCE_ROUNDS rounds, default 150: 450 responses); its median TTFT,
# median complete time and mean round throughput stand for the simulator's true figures (their
# own intervals are printed, a few times narrower than the small attempts'). Then COVERAGE_REPEATS
# (40) small attempts, each against a simulator of its own seed (independent jitter), of
# COVERAGE_ROUNDS (10) rounds of 3 concurrent requests, and for each figure the share of them
# whose interval holds the truth. Prints that share per figure, with the intervals' methods.
# Asserts nothing; exits non-zero only if a run fails.
#
# Environment (defaults): COVERAGE_REPEATS (40), COVERAGE_ROUNDS (10), COVERAGE_REFERENCE_ROUNDS
# (150), COVERAGE_TIME_SCALE (2), COVERAGE_KEEP (unset: the work folder is removed at exit).
set -euo pipefail
cd "$(dirname "$0")/.."

repeats="${COVERAGE_REPEATS:-40}"
rounds="${COVERAGE_ROUNDS:-10}"
reference_rounds="${COVERAGE_REFERENCE_ROUNDS:-150}"
scale="${COVERAGE_TIME_SCALE:-2}"

cargo build --release -q -p llmload
bin="$PWD/target/release/llmload"
work="$(mktemp -d)"
sims=()
cleanup() {
  for p in "${sims[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -n "${COVERAGE_KEEP:-}" ]; then echo "work folder kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# measure NAME SEED ROUNDS: one attempt against a fresh simulator of SEED; prints its folder.
measure() {
  local name="$1" seed="$2" n="$3" url=""
  "$bin" sim --port 0 --seed "$seed" --time-scale "$scale" >"$work/$name.log" 2>&1 &
  sims+=("$!")
  for _ in $(seq 100); do
    url="$(grep -o 'http://[0-9.:]*' "$work/$name.log" | head -1 || true)"
    [ -n "$url" ] && break
    sleep 0.1
  done
  "$bin" run --url "$url" --out "$work/out" --name "$name" --telemetry off -q \
    --input-tokens 128 --concurrency 3 --output-tokens 16 --rounds "$n" --warmup 2 >/dev/null
  kill "${sims[-1]}" 2>/dev/null || true
  ls -d "$work/out/$name"/*/ | head -1
}

reference="$(measure reference 1000 "$reference_rounds")"
for i in $(seq "$repeats"); do
  measure "small$i" "$i" "$rounds" >>"$work/small"
done

python3 - "$reference" "$work/small" <<'PY'
import json, sys

def case(folder):
    return json.load(open(folder.rstrip("/") + "/summary.json"))["cases"][0]

figures = {
    "median TTFT": (lambda c: c["ttft_ms"]["median"], lambda c: c["ttft_ms"]["ci"], "median"),
    "median complete time": (lambda c: c["e2e_ms"]["median"], lambda c: c["e2e_ms"]["ci"], "median"),
    "mean round throughput": (lambda c: c["throughput_tps"]["mean"], lambda c: c["throughput_tps"]["ci"], "interval"),
}
ref = case(sys.argv[1])
small = [case(line.strip()) for line in open(sys.argv[2]) if line.strip()]
print(f"truth: one attempt of {ref['counts']['ok']} responses; "
      f"coverage over {len(small)} attempts of {small[0]['counts']['ok']} responses each\n")
for name, (value, ci, key) in figures.items():
    truth = value(ref)
    r = ci(ref)
    rlow, rhigh = r.get(key) or [None, None]
    held = with_interval = 0
    methods = set()
    for c in small:
        i = ci(c)
        methods.add(f"{i['method']} over {i['units']} {i['unit']}s")
        bounds = i.get(key)
        if not bounds:
            continue
        with_interval += 1
        held += bounds[0] <= truth <= bounds[1]
    share = 100 * held / with_interval if with_interval else float("nan")
    print(f"{name}: truth {truth:.3f} (its own interval {rlow:.3f}–{rhigh:.3f}); "
          f"the 95 % interval held it in {held} of {with_interval} attempts ({share:.0f} %); "
          f"methods: {', '.join(sorted(methods))}")
PY
