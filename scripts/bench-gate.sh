#!/usr/bin/env bash
# The regression gate against noise: how often identical attempts pass `compare --fail-if`, and
# whether a real slowdown is caught.
#
#   scripts/bench-gate.sh [sim|llama|ab|plan|all]     (default all)
#
# sim:   the built-in simulator's engine profile (its step jitter on), GATE_SIM_PAIRS (3) seeds:
#        per seed, two identical attempts A and B against one simulator, and C against a
#        simulator of the same seed run 1.4 times slower (--time-scale; TTFT 40 % longer).
#        Gates A/B and A/C with `ttft_p50 > +10%` and `ttft_p99 > +10%`.
# llama: a real llama-server (scripts/start-llama-server.sh, 2 slots, 2 threads) and a slower one
#        beside it (GATE_SLOW_FLAGS, default `--threads 1`: half the threads; on a machine busy
#        with other work one thread can keep up with two, so run it on an idle one), then
#        GATE_LLAMA_PAIRS (20) times three series (`run --repeat GATE_REPEATS`, default 3) one
#        after the other: A and B on the first server, C on the slower one between them. Gates
#        A/B (identical) and A/C (slower) with `ttft_p50 > +10%` and `throughput < -10%`.
# ab:    `llmload ab` on a real llama-server (as for llama): GATE_AB_PAIRS (5) times, an identical
#        pair (both arms the server itself) and a pair whose candidate is the server behind
#        `llmload delay-proxy --delay 200ms`; GATE_AB_ROUNDS (24) one-round blocks a side of one
#        request each. Gates each with GATE_AB_RULES (comma-separated, default `ttft_p50 > +10%`
#        and `e2e_p50 > +10%`; on a machine so busy that a TTFT takes seconds, 200 ms is under
#        10 % of it and "inconclusive" is the right answer) on the paired blocks, and prints the
#        machine's load (/proc/loadavg) before and after.
# plan:  whether `llmload plan`'s interval holds a re-measurement, on a real llama-server (as for
#        llama). GATE_PLAN_CASES (10) times: a series S (`--repeat GATE_REPEATS`) then a single
#        attempt R, each of concurrency 1 and 4 (GATE_PLAN_ROUNDS, 12, rounds: 48 TTFTs at 4,
#        enough for a p90's interval; 64-token prompts, 8 tokens out), and `plan
#        --percentile p90` with a TTFT budget every load keeps, so that each answer rests on
#        concurrency 4. Holds, per case: S's interval (widened by its
#        repeats' spread) against R's p90; R's own interval (one attempt only) against the next
#        R's; R's interval with the earlier Rs as --history against the next R's. Prints each
#        answer's "Between runs" sentence kind and the counts of intervals that held.
# Prints, per pair, each rule's verdict and the gate's exit code, then the counts: pairs passed (no
# rule regressed), exits of 5, verdicts by kind (improved among them). Asserts nothing; exits
# non-zero only if a run fails.
#
# Environment (defaults): GATE_SIM_PAIRS (3), GATE_LLAMA_PAIRS (20), GATE_REPEATS (3),
# GATE_PLAN_CASES (10), GATE_PLAN_ROUNDS (12),
# GATE_SLOW_FLAGS (see above), GATE_AB_PAIRS (5), GATE_AB_ROUNDS (24), GATE_AB_RULES (see above),
# GATE_AB_LLAMA_FLAGS (more flags for ab's llama-server, e.g. `--threads 1`), GATE_BIN (unset: a release build of llmload), GATE_KEEP (unset: the work folder is
# removed at exit).
set -euo pipefail
cd "$(dirname "$0")/.."

what="${1:-all}"
sim_pairs="${GATE_SIM_PAIRS:-3}"
llama_pairs="${GATE_LLAMA_PAIRS:-20}"
repeats="${GATE_REPEATS:-3}"

if [ -n "${GATE_BIN:-}" ]; then
  bin="$GATE_BIN"
else
  cargo build --release -q -p llmload
  bin="$PWD/target/release/llmload"
fi
work="$(mktemp -d)"
# The servers started (each the leader of its own process group), one pid a line: they are
# started inside $(…), whose variables the script never sees.
: >"$work/pids"
# A server under timeout(1) is in a process group of its own (timeout makes one): its group is
# stopped first, then the starter's.
stop() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do
    kill -- "-$child" 2>/dev/null || kill "$child" 2>/dev/null || true
  done
  kill -- "-$1" 2>/dev/null || kill "$1" 2>/dev/null || true
}
cleanup() {
  while read -r p; do stop "$p"; done <"$work/pids"
  if [ -n "${GATE_KEEP:-}" ]; then echo "work folder kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# start_bin NAME WHAT ARGS…: `llmload ARGS…` (a server, WHAT in the error) in the background;
# prints its URL.
start_bin() {
  local name="$1" what="$2"
  shift 2
  setsid "$bin" "$@" >"$work/$name.log" 2>&1 &
  echo "$!" >>"$work/pids"
  for _ in $(seq 100); do
    url="$(grep -o 'http://[0-9.:]*' "$work/$name.log" 2>/dev/null | head -1 || true)"
    [ -n "$url" ] && { echo "$url"; return; }
    sleep 0.1
  done
  echo "bench-gate: $what did not start" >&2
  exit 1
}

# start_sim NAME ARGS…: a simulator in the background; prints its URL.
start_sim() {
  local name="$1"
  shift
  start_bin "$name" "the simulator" sim --port 0 "$@"
}

# gate A B RULES…: compare's verdicts (one word per rule, with where its between-run term came
# from: `repeats`, `history`, `trend`, or `unknown` where the check says it is not known) and
# exit code, on one line.
gate() {
  local a="$1" b="$2"
  shift 2
  local code=0 json
  json="$("$bin" compare "$a" "$b" "$@" --json)" || code=$?
  python3 -c '
import json, sys
g = json.loads(sys.argv[1])["gate"]
def source(c):
    b = c.get("between_runs")
    return "unknown" if not b else str(b.get("source", "unknown"))
print(" ".join(c["rule"]["text"].split()[0] + "=" + c["verdict"] + "(" + source(c) + ")"
               for c in g["checks"]), end="")
' "$json"
  echo " exit=$code"
}

# attempt NAME URL FLAGS…: one attempt; prints its folder.
attempt() {
  local name="$1" url="$2"
  shift 2
  "$bin" run --url "$url" --out "$work/out" --name "$name" --telemetry off -q "$@" >/dev/null
  ls -d "$work/out/$name"/*/ | head -1
}

# summary LABEL FILE: counts of the pairs in FILE (lines of `gate`'s output).
summary() {
  local label="$1" file="$2"
  local total passed
  total="$(wc -l <"$file")"
  passed="$(grep -c ' exit=0$' "$file" || true)"
  echo "$label: $passed of $total pairs passed the gate (exit 0)"
  tr ' ' '\n' <"$file" | grep '=' | grep -v '^exit=' | sed 's/.*=//; s/(.*//' | sort | uniq -c |
    awk '{printf "  %s %s\n", $1, $2}'
  # Where each check's between-run term came from (the gate's checks only).
  if grep -q '(' "$file"; then
    echo "  between-run term: $(tr ' ' '\n' <"$file" | grep -o '([a-z-]*)' | tr -d '()' | sort |
      uniq -c | awk '{printf "%s%s %s", sep, $2, $1; sep = ", "}')"
  fi
}

if [ "$what" = sim ] || [ "$what" = all ]; then
  flags=(--input-tokens 256 --concurrency 4 --output-tokens 16 --rounds 16 --warmup 2)
  rules=(--fail-if 'ttft_p50 > +10%' --fail-if 'ttft_p99 > +10%')
  : >"$work/sim-same" && : >"$work/sim-slow"
  for seed in $(seq "$sim_pairs"); do
    url="$(start_sim "sim$seed" --seed "$seed")"
    a="$(attempt "sim$seed-a" "$url" "${flags[@]}")"
    b="$(attempt "sim$seed-b" "$url" "${flags[@]}")"
    slow_url="$(start_sim "slow$seed" --seed "$seed" --time-scale 0.7142857)"
    c="$(attempt "sim$seed-c" "$slow_url" "${flags[@]}")"
    tail -n 2 "$work/pids" | while read -r p; do stop "$p"; done
    echo "simulator seed $seed, identical: $(gate "$a" "$b" "${rules[@]}" | tee -a "$work/sim-same")"
    echo "simulator seed $seed, 40 % slower: $(gate "$a" "$c" "${rules[@]}" | tee -a "$work/sim-slow")"
  done
  summary "simulator, identical pairs" "$work/sim-same"
  summary "simulator, TTFT 40 % slower" "$work/sim-slow"
fi

# start_llama NAME FLAGS…: llama-server with 2 slots, 2 threads and FLAGS; prints its URL.
start_llama() {
  local name="$1"
  shift
  setsid scripts/start-llama-server.sh --slots 2 --slot-context 2048 --threads 2 "$@" \
    >"$work/$name.log" 2>&1 &
  echo "$!" >>"$work/pids"
  for _ in $(seq 600); do
    url="$(grep -o 'http://127.0.0.1:[0-9]*' "$work/$name.log" | head -1 || true)"
    if [ -n "$url" ] && curl -sf -o /dev/null "$url/health"; then
      echo "$url"
      return
    fi
    sleep 0.5
  done
  echo "bench-gate: llama-server did not start" >&2
  exit 1
}

if [ "$what" = llama ] || [ "$what" = all ]; then
  flags=(--input-tokens 64 --concurrency 2 --output-tokens 8 --rounds 2 --repeat "$repeats")
  rules=(--fail-if 'ttft_p50 > +10%' --fail-if 'throughput < -10%')
  : >"$work/llama-same" && : >"$work/llama-slow"
  read -r -a slow_flags <<<"${GATE_SLOW_FLAGS:---threads 1}"
  # Both servers run throughout (an idle one costs nothing), and each pair's three series run
  # one after the other (A, slower C, B): the machine's drift over the benchmark (another job
  # starting, the CPU's clock) falls on both comparisons alike instead of on the slower
  # server's alone.
  url="$(start_llama llama)"
  slow_url="$(start_llama llama-slow "${slow_flags[@]}")"
  for i in $(seq "$llama_pairs"); do
    a="$(attempt "llama$i-a" "$url" "${flags[@]}")"
    c="$(attempt "llama$i-c" "$slow_url" "${flags[@]}")"
    b="$(attempt "llama$i-b" "$url" "${flags[@]}")"
    echo "llama-server pair $i, identical: $(gate "$a" "$b" "${rules[@]}" | tee -a "$work/llama-same")"
    echo "llama-server pair $i, slower (${slow_flags[*]}): $(gate "$a" "$c" "${rules[@]}" | tee -a "$work/llama-slow")"
  done
  summary "llama-server, identical series (--repeat $repeats)" "$work/llama-same"
  summary "llama-server, slower (${slow_flags[*]}) against the series before it" "$work/llama-slow"
fi

# start_proxy NAME UPSTREAM FLAGS…: `llmload delay-proxy` in the background; prints its URL.
start_proxy() {
  local name="$1"
  shift
  start_bin "$name" "the delaying proxy" delay-proxy "$@"
}

# ab_gate NAME BASE CANDIDATE FLAGS…: `llmload ab`'s verdicts (one word per rule) and exit code.
ab_gate() {
  local name="$1" base="$2" candidate="$3"
  shift 3
  local code=0 json
  json="$("$bin" ab "$base" "$candidate" --out "$work/out" --name "$name" --json "$@" \
    2>"$work/$name.err")" || code=$?
  python3 -c '
import json, sys
checks = json.loads(sys.argv[1])["ab"]["checks"]
print(" ".join(c["rule"].split()[0] + "=" + c["verdict"] for c in checks), end="")
' "$json"
  echo " exit=$code"
}

if [ "$what" = ab ] || [ "$what" = all ]; then
  ab_pairs="${GATE_AB_PAIRS:-5}"
  flags=(--input-tokens 64 --concurrency 1 --output-tokens 8 --rounds "${GATE_AB_ROUNDS:-24}"
    --telemetry off -q)
  rules=()
  IFS=',' read -r -a ab_rules <<<"${GATE_AB_RULES:-ttft_p50 > +10%,e2e_p50 > +10%}"
  for rule in "${ab_rules[@]}"; do rules+=(--fail-if "$rule"); done
  : >"$work/ab-same" && : >"$work/ab-slow"
  echo "load before: $(cat /proc/loadavg)"
  # GATE_AB_LLAMA_FLAGS: more llama-server flags; `--threads 1` beside a build, where two
  # threads sharing one free core wait on each other (a request of 8 tokens took 17 s so).
  read -r -a ab_llama_flags <<<"${GATE_AB_LLAMA_FLAGS:-}"
  url="$(start_llama ab-llama ${ab_llama_flags[@]+"${ab_llama_flags[@]}"})"
  slow_url="$(start_proxy ab-slow "$url" --delay 200ms)"
  for i in $(seq "$ab_pairs"); do
    echo "ab pair $i, identical: $(ab_gate "ab$i-same" "$url" "$url" "${flags[@]}" "${rules[@]}" |
      tee -a "$work/ab-same")"
    echo "ab pair $i, candidate 200 ms slower: $(ab_gate "ab$i-slow" "$url" "$slow_url" \
      "${flags[@]}" "${rules[@]}" | tee -a "$work/ab-slow")"
  done
  echo "load after: $(cat /proc/loadavg)"
  for kind in same slow; do
    label="identical"
    [ "$kind" = slow ] && label="candidate 200 ms slower"
    summary "ab on llama-server, $label" "$work/ab-$kind"
    echo "  exits of 5: $(grep -c ' exit=5$' "$work/ab-$kind" || true); runs with an improved \
verdict: $(grep -c '=improved' "$work/ab-$kind" || true)"
  done
fi

# plan_answer ATTEMPT FLAGS…: plan's answer at the typical length, one line: the load, the p90
# TTFT, its interval's ends (ms) and which between-run sentence it gave (`repeats`, `history` or
# `one`).
plan_answer() {
  local dir="$1"
  shift
  # Every load keeps the budget, so plan says the limit lies above them and exits 3.
  { "$bin" plan "$dir" --prompt-tokens 64 --output-tokens 8 --ttft 120s --percentile p90 \
    --json "$@" || true; } | python3 -c '
import json, sys
s = json.load(sys.stdin)["lengths"][0]["curves"][0]["support"]
b = s["between_runs"]
kind = "repeats" if "repeats of this attempt" in b else ("history" if "earlier" in b and "holds" in b else "one")
# No interval (too few responses for one): both ends "nan", so that nothing is held.
print(s["load"], s["ttft_ms"], s.get("ttft_low_ms", "nan"), s.get("ttft_high_ms", "nan"), kind)
'
}

if [ "$what" = plan ] || [ "$what" = all ]; then
  plan_cases="${GATE_PLAN_CASES:-10}"
  flags=(--input-tokens 64 --output-tokens 8 --concurrency 1,4 --rounds "${GATE_PLAN_ROUNDS:-12}")
  : >"$work/plan-rows"
  echo "load before: $(cat /proc/loadavg)"
  url="$(start_llama plan-llama)"
  singles=()
  for i in $(seq "$plan_cases"); do
    series="$(attempt "plan$i-s" "$url" "${flags[@]}" --repeat "$repeats")"
    single="$(attempt "plan$i-r" "$url" "${flags[@]}")"
    history=()
    for earlier in "${singles[@]}"; do history+=(--history "$earlier"); done
    echo "$i series $(plan_answer "$series")" >>"$work/plan-rows"
    echo "$i single $(plan_answer "$single")" >>"$work/plan-rows"
    if [ "${#history[@]}" -gt 0 ]; then
      echo "$i history $(plan_answer "$single" "${history[@]}")" >>"$work/plan-rows"
    fi
    singles+=("$single")
    echo "plan case $i: $(grep "^$i " "$work/plan-rows" | cut -d' ' -f2- | tr '\n' ';')"
  done
  echo "load after: $(cat /proc/loadavg)"
  python3 - "$work/plan-rows" <<'PY'
import collections, sys
rows = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    i, what, load, ttft, low, high, kind = line.split()
    rows[int(i)][what] = (float(load), float(ttft), float(low), float(high), kind)
checks = collections.defaultdict(list)
for i in sorted(rows):
    r = rows[i]
    # The series' interval against this case's single attempt, measured right after it.
    checks["series (--repeat), against the single attempt after it"].append((r["series"], r["single"][1]))
    nxt = rows.get(i + 1)
    if nxt:
        # A single attempt's interval (with and without history) against the next single one.
        checks["single attempt, against the next single attempt"].append((r["single"], nxt["single"][1]))
        if "history" in r:
            checks["single attempt with --history, against the next"].append((r["history"], nxt["single"][1]))
for label, cs in checks.items():
    held = sum(1 for (load, _, low, high, _), truth in cs if low <= truth <= high)
    kinds = collections.Counter(a[4] for a, _ in cs)
    print(f"{label}: {held} of {len(cs)} intervals held the re-measured p90; between-run sentence: "
          + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    for (load, ttft, low, high, kind), truth in cs:
        mark = "held" if low <= truth <= high else "MISSED"
        print(f"    concurrency {load:g}: {ttft:.0f} ms [{low:.0f}, {high:.0f}] ({kind}); re-measured {truth:.0f} ms: {mark}")
PY
fi
