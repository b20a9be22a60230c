#!/usr/bin/env bash
# Coverage and cost of `llmload capacity`: how often the true boundary lies within the bracket
# it answers, and how long its search takes against an exhaustive sweep of the same simulator.
#
#   scripts/bench-capacity.sh
#
# For each seed, an 8-slot simulator (`cpu-tiny` with 2 % step jitter, that seed) and three
# objective shapes, closed-continuous, 64-token prompts, 16 output tokens:
#
#   percentile   --slo ttft_p90<30ms
#   attainment   --slo ttft<20ms@80%
#   errors       --slo errors<5%, against a simulator that also fails 2 % of requests
#                (--fault http503:rate=0.02) and a client timeout of 150 ms, so that past the
#                slots the queue makes requests time out
#   open         --slo ttft_p90<50ms with Poisson arrivals (--arrival poisson): the answer in
#                requests/s, to capacity's default resolution (5 %)
#
# The truth: an exhaustive sweep of the same simulator, every concurrency from 1 to
# CAPACITY_MAX_LOAD (16), CAPACITY_SWEEP_REQUESTS (1000) requests each; the true boundary is the
# largest load such that it and every load below it meet the objective over all its requests.
# A search covers the truth when max_passing ≤ boundary < first_failing. For the open loop the
# truth is a sweep of rates from CAPACITY_OPEN_FROM (45) requests/s up by 5 % a step,
# CAPACITY_OPEN_STEPS (13) of them, CAPACITY_OPEN_REQUESTS (1000) requests each, TTFT counted
# from each request's scheduled time as capacity counts it: the bound is crossed between the
# last rate that (with every rate below it) meets it and the next; the search covers it when its
# bracket overlaps that interval (max passing below the first failing rate of the sweep, first
# failing above its last passing one). Prints, per shape, the coverage over the seeds, and each
# search's wall time beside the exhaustive sweep's (the sweep is at resolution 1 too: every whole
# load). Asserts nothing; exits non-zero only if a run fails to start.
#
# Environment (defaults): CAPACITY_SEEDS (20), CAPACITY_MAX_LOAD (16), CAPACITY_SWEEP_REQUESTS
# (1000), CAPACITY_OPEN_SEEDS (all: the open loop on the first N seeds), CAPACITY_CONFIDENCE
# (0.95), CAPACITY_OPEN_ONLY (unset: set, the open loop alone), CAPACITY_BIN (unset: a release
# build of this checkout), CAPACITY_KEEP (unset: the work
# folder is removed at exit), CAPACITY_JOBS (1): seeds run at once, each on simulators of its
# own. The simulators sleep out their schedules, so a seed's work is mostly waiting; with more
# than one job the runs share the CPUs, each time is still that run's own wall time, and the
# load averages at the start and the end are printed. The truth is the simulator's state over a
# long run: a busy machine's scheduling delays can move it (a closed loop's requests in step at
# the slots' edge fall out of step), so run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."

seeds="${CAPACITY_SEEDS:-20}"
max_load="${CAPACITY_MAX_LOAD:-16}"
sweep_requests="${CAPACITY_SWEEP_REQUESTS:-1000}"
confidence="${CAPACITY_CONFIDENCE:-0.95}"
jobs="${CAPACITY_JOBS:-1}"
open_from="${CAPACITY_OPEN_FROM:-45}"
open_steps="${CAPACITY_OPEN_STEPS:-13}"
open_requests="${CAPACITY_OPEN_REQUESTS:-1000}"
open_seeds="${CAPACITY_OPEN_SEEDS:-$seeds}"
# CAPACITY_OPEN_ONLY=1: the open loop alone (its seeds, none of the closed shapes).
closed=1
if [ -n "${CAPACITY_OPEN_ONLY:-}" ]; then closed=""; fi

bin="${CAPACITY_BIN:-}"
if [ -z "$bin" ]; then
  cargo build --release -q -p llmload
  bin="$PWD/target/release/llmload"
fi
work="$(mktemp -d)"
sed 's/jitter = 0.0/jitter = 0.02/' crates/llmload-sim/profiles/cpu-tiny.toml >"$work/tiny.toml"
sims=()
: >"$work/pids"
cleanup() {
  for p in "${sims[@]}" $(cat "$work/pids"); do kill "$p" 2>/dev/null || true; done
  if [ -n "${CAPACITY_KEEP:-}" ]; then echo "work folder kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

workload=(--input-tokens 64 --output-tokens 16 --telemetry off -q)

# start_sim NAME SEED [FAULT…]: an 8-slot simulator; sets `url` (run it in this shell, not in a
# substitution, so that `sims` keeps its process for the cleanup).
start_sim() {
  local name="$1" seed="$2"
  url=""
  shift 2
  "$bin" sim --port 0 --seed "$seed" --profile "$work/tiny.toml" --slots 8 "$@" \
    >"$work/$name.log" 2>&1 &
  sims+=("$!")
  echo "$!" >>"$work/pids"
  for _ in $(seq 100); do
    url="$(grep -o 'http://[0-9.:]*' "$work/$name.log" | head -1 || true)"
    [ -n "$url" ] && break
    sleep 0.1
  done
}

now() { date +%s.%N; }

# sweep NAME URL [FLAGS…]: every load from 1 to max_load; prints its attempt folder and time.
sweep() {
  local name="$1" url="$2" start
  shift 2
  start="$(now)"
  "$bin" run --url "$url" --out "$work/out" --name "$name" "${workload[@]}" \
    --arrival closed-continuous --concurrency "$(seq -s, 1 "$max_load")" \
    --requests "$sweep_requests" "$@" >/dev/null || true
  echo "$(ls -d "$work/out/$name"/*/ | head -1) $(echo "$(now) - $start" | bc)"
}

# search NAME URL SLO [FLAGS…]: one capacity search; prints its answer file and time. The load
# goes up to max_load (16 in flight), or 400 requests/s with --arrival.
search() {
  local name="$1" url="$2" slo="$3" start most="$max_load"
  shift 3
  [[ " $* " == *" --arrival "* ]] && most=400
  start="$(now)"
  "$bin" capacity --url "$url" --out "$work/out" --name "$name" "${workload[@]}" \
    --slo "$slo" --max-load "$most" --confidence "$confidence" --json "$@" \
    >"$work/$name.json" || true
  echo "$work/$name.json $(echo "$(now) - $start" | bc)"
}

: >"$work/results"
# one_seed SEED: the two sweeps and three searches of one seed, into results.SEED.
one_seed() {
  local seed="$1" swept swept_s p p_s a a_s faulty faulty_s e e_s
  : >"$work/results.$seed"
  if [ -n "$closed" ]; then
    start_sim "plain$seed" "$seed"
    read -r swept swept_s < <(sweep "sweep$seed" "$url")
    read -r p p_s < <(search "p$seed" "$url" "ttft_p90<30ms")
    read -r a a_s < <(search "a$seed" "$url" "ttft<20ms@80%")
    kill "${sims[-1]}" 2>/dev/null || true
    start_sim "faulty$seed" "$seed" --fault http503:rate=0.02
    read -r faulty faulty_s < <(sweep "faulty$seed" "$url" --timeout 150ms)
    read -r e e_s < <(search "e$seed" "$url" "errors<5%" --timeout 150ms)
    kill "${sims[-1]}" 2>/dev/null || true
    {
      echo "percentile $swept $swept_s $p $p_s"
      echo "attainment $swept $swept_s $a $a_s"
      echo "errors $faulty $faulty_s $e $e_s"
    } >>"$work/results.$seed"
  fi
  local rates start open open_s o o_s
  if [ "$seed" -gt "$open_seeds" ]; then
    return
  fi
  start_sim "open$seed" "$seed"
  rates="$(python3 -c "print(','.join(f'{$open_from * 1.05 ** k:.3f}' for k in range($open_steps)))")"
  start="$(now)"
  "$bin" run --url "$url" --out "$work/out" --name "rates$seed" "${workload[@]}" \
    --arrival poisson --rate "$rates" --requests "$open_requests" --seed "$seed" >/dev/null || true
  open="$(ls -d "$work/out/rates$seed"/*/ | head -1)"
  open_s="$(echo "$(now) - $start" | bc)"
  read -r o o_s < <(search "o$seed" "$url" "ttft_p90<50ms" --arrival poisson \
    --rate "$open_from" --seed "$seed")
  kill "${sims[-1]}" 2>/dev/null || true
  echo "open $open $open_s $o $o_s" >>"$work/results.$seed"
}

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); $jobs seed(s) at once"
running=0
for seed in $(seq "$seeds"); do
  one_seed "$seed" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
for seed in $(seq "$seeds"); do cat "$work/results.$seed" >>"$work/results" 2>/dev/null || true; done

python3 - "$work/results" <<'PY'
import collections, json, os, sys

def records(folder):
    with open(os.path.join(folder, "requests.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r.get("phase") == "measured" and r.get("status") not in ("cancelled", "abandoned"):
                yield r

def load_of(case):
    # in64-cc8-out16 → 8
    return int(case.split("-cc")[1].split("-")[0])

def meets(shape, rs):
    ok = [r for r in rs if r["status"] == "ok"]
    if shape == "errors":
        return (len(rs) - len(ok)) / len(rs) <= 0.05
    bound, share = (30.0, 0.90) if shape == "percentile" else (20.0, 0.80)
    within = sum(1 for r in ok if r.get("ttft_ms") is not None and r["ttft_ms"] <= bound)
    return within / len(rs) >= share

def truth(shape, folder):
    by_load = collections.defaultdict(list)
    for r in records(folder):
        by_load[load_of(r["case"])].append(r)
    boundary = 0
    for load in sorted(by_load):
        if not meets(shape, by_load[load]):
            break
        boundary = load
    return boundary

def rate_of(case):
    # in64-poisson-r47.25-out16 → 47.25
    return float(case.split("-r")[1].split("-")[0])

def open_truth(folder):
    # (last passing rate, first failing rate): TTFT from the scheduled time, p90 < 50 ms, a
    # failed request missing the bound.
    by_rate = collections.defaultdict(list)
    for r in records(folder):
        by_rate[rate_of(r["case"])].append(r)
    passing = 0.0
    for rate in sorted(by_rate):
        rs = by_rate[rate]
        within = 0
        for r in rs:
            if r["status"] == "ok" and r.get("first_token_s") is not None:
                if (r["first_token_s"] - r["scheduled_s"]) * 1e3 < 50.0:
                    within += 1
        if within / len(rs) < 0.90:
            return passing, rate
        passing = rate
    return passing, float("inf")

rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    shape, swept, swept_s, answer, search_s = line.split()
    try:
        a = json.load(open(answer))
    except (OSError, ValueError):
        rows[shape].append((None, None, None, float(swept_s), float(search_s), "no answer"))
        continue
    low = (a.get("max_passing") or {}).get("load", 0)
    high = (a.get("first_failing") or {}).get("load", float("inf"))
    # How the answer ended: decided, undecided, or taken back by the re-measurement; and how
    # the bracket's ends fared when re-measured side by side.
    again = [((a.get(end) or {}).get("remeasured") or {}).get("verdict", "-")
             for end in ("max_passing", "first_failing")]
    if a.get("decided"):
        how = "decided"
    elif a.get("stopped_because", "").startswith("the boundary moved"):
        how = "moved"
    else:
        how = "undecided"
    how += " (re-measured: " + ", ".join(again) + ")" if again != ["-", "-"] else ""
    t = open_truth(swept) if shape == "open" else truth(shape, swept)
    rows[shape].append((t, low, high, float(swept_s), float(search_s), how))

def covers(t, lo, hi):
    if isinstance(t, tuple):
        return lo < t[1] and hi > t[0]
    return lo <= t < hi

print(f"{'shape':<11} {'searches':>8} {'covered':>8} {'coverage':>9} {'search s':>9} {'sweep s':>8} {'ratio':>6}")
for shape, rs in rows.items():
    done = [r for r in rs if r[0] is not None]
    covered = sum(1 for t, lo, hi, *_ in done if covers(t, lo, hi))
    search = sum(r[4] for r in rs) / len(rs)
    sweep = sum(r[3] for r in rs) / len(rs)
    coverage = covered / len(done) if done else float("nan")
    print(f"{shape:<11} {len(rs):>8} {covered:>8} {coverage:>9.0%} {search:>9.1f} {sweep:>8.1f} {search / sweep:>6.0%}")
    ends = collections.Counter(r[5].split(" ")[0] for r in rs)
    print("    answers: " + ", ".join(f"{n} {how}" for how, n in sorted(ends.items())))
    for t, lo, hi, sw, se, how in rs:
        print(f"    truth {t}, bracket [{lo}, {hi}), {how}, search {se:.1f} s, sweep {sw:.1f} s")
print("coverage: the share of searches whose bracket [max passing, first failing) holds the")
print("boundary of the exhaustive sweep (open: overlaps the sweep's (last passing, first failing]")
print("rates); times are wall seconds, means over the seeds.")
PY
