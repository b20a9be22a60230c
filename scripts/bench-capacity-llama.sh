#!/usr/bin/env bash
# `llmload capacity` on a real llama-server (Gemma 3 270M, scripts/start-llama-server.sh), then
# confirmatory runs at its answer: does the largest load it says meets the objective meet it
# over a long run of its own, and does the first it says fails, fail?
#
#   scripts/bench-capacity-llama.sh [SLOTS…]        (default: 2 4)
#
# For each slot count, a llama-server with that many slots (2 threads, 2,048 tokens a slot):
#
#   1. the p90 TTFT closed-continuous at SLOTS and SLOTS + 1 in flight (LLAMA_CAP_PROBE, 100
#      requests each): one request more than the slots waits for one to free;
#   2. a bound midway between the two (to the millisecond), and
#      `llmload capacity --slo ttft_p90<BOUND --start SLOTS` with blocks of LLAMA_CAP_BLOCK (20)
#      requests (the search, the bracket re-measured side by side, the answer);
#   3. confirmatory runs at max passing and first failing, LLAMA_CAP_CONFIRM (200) requests each:
#      each one's p90 TTFT and its 95 % interval against the bound, "meets" where the interval
#      lies below it, "fails" above, "cannot tell" across.
#
# 64-token prompts, 16 output tokens (LLAMA_CAP_FLAGS replaces both). Prints the search's answer,
# the loads it measured, its time, the confirmations, and the load average before and after each
# step. Asserts nothing: a confirmation that disagrees is a finding, printed as such. About 10
# minutes a slot count on 2 cores. LLAMA_CAP_BIN: the llmload to run (default: a release build of
# this checkout). The work folder is removed at exit unless LLAMA_CAP_KEEP is set.
set -euo pipefail
cd "$(dirname "$0")/.."

slots_list=("$@")
[ ${#slots_list[@]} -gt 0 ] || slots_list=(2 4)
probe="${LLAMA_CAP_PROBE:-100}"
block="${LLAMA_CAP_BLOCK:-20}"
confirm="${LLAMA_CAP_CONFIRM:-200}"
read -r -a workload <<<"${LLAMA_CAP_FLAGS:---input-tokens 64 --output-tokens 16}"

bin="${LLAMA_CAP_BIN:-}"
if [ -z "$bin" ]; then
  cargo build --release -q -p llmload
  bin="$PWD/target/release/llmload"
fi
work="$(mktemp -d)"
server_pid=""
# stop_server: the server's process group, SIGTERM and after 10 s SIGKILL (llama-server can
# outlive a SIGTERM).
stop_server() {
  if [ -z "$server_pid" ]; then return; fi
  kill -TERM -- "-$server_pid" 2>/dev/null || true
  for _ in $(seq 20); do
    kill -0 -- "-$server_pid" 2>/dev/null || break
    sleep 0.5
  done
  kill -KILL -- "-$server_pid" 2>/dev/null || true
  server_pid=""
}
cleanup() {
  stop_server
  if [ -z "${LLAMA_CAP_KEEP:-}" ]; then rm -rf "$work"; else echo "kept: $work"; fi
}
trap cleanup EXIT

load() { cut -d' ' -f1-3 /proc/loadavg; }

# start_llama SLOTS: a llama-server of SLOTS slots; sets server_pid, prints its URL.
start_llama() {
  setsid scripts/start-llama-server.sh --slots "$1" --slot-context 2048 --threads 2 \
    >"$work/server-$1.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1200); do
    url="$(grep -o 'http://127.0.0.1:[0-9]*' "$work/server-$1.log" | head -1 || true)"
    if [ -n "$url" ] && curl -sf -o /dev/null "$url/health"; then
      echo "$url"
      return
    fi
    sleep 0.5
  done
  echo "bench-capacity-llama: llama-server did not start" >&2
  exit 1
}

# run_at NAME URL CONCURRENCY REQUESTS: a closed-continuous run; prints its summary's path.
run_at() {
  "$bin" run --url "$2" "${workload[@]}" --arrival closed-continuous --concurrency "$3" \
    --requests "$4" --telemetry off -q --out "$work/out" --name "$1" >/dev/null
  ls -d "$work/out/$1"/*/summary.json | tail -1
}

# p90 SUMMARY: "P90 LOW HIGH N" of the case's TTFT, ms.
p90() {
  python3 - "$1" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["cases"][0]["ttft_ms"]
low, high = t.get("ci", {}).get("p90", [float("nan")] * 2)
print(f"{t['p90']:.1f} {low:.1f} {high:.1f} {t['n']}")
PY
}

for slots in "${slots_list[@]}"; do
  echo "== llama-server, $slots slots (load average $(load))"
  url="$(start_llama "$slots")"
  # A first request warms the model's pages in.
  run_at "warm$slots" "$url" 1 4 >/dev/null
  read -r at_slots _ _ n1 < <(p90 "$(run_at "p90-$slots" "$url" "$slots" "$probe")")
  read -r above _ _ n2 < <(p90 "$(run_at "p90-$((slots + 1))" "$url" "$((slots + 1))" "$probe")")
  bound="$(python3 -c "print(round(($at_slots + $above) / 2))")"
  echo "p90 TTFT: $at_slots ms at $slots in flight (n $n1), $above ms at $((slots + 1)) (n $n2);" \
    "bound ${bound} ms (load average $(load))"
  started=$SECONDS
  set +e
  "$bin" capacity --url "$url" "${workload[@]}" --slo "ttft_p90<${bound}ms" --start "$slots" \
    --requests "$block" --telemetry off -q --json --out "$work/out" --name "cap$slots" \
    >"$work/cap$slots.json"
  code=$?
  set -e
  echo "capacity: exit $code in $((SECONDS - started)) s (load average $(load))"
  python3 - "$work/cap$slots.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
print("  " + c["answer"])
print("  stopped: " + c["stopped_because"])
for p in c["probes"]:
    v = p["verdicts"][0]
    again = p.get("remeasured")
    more = ""
    if again:
        w = again["verdicts"][0]
        more = (f"; re-measured {w['verdict']} {w['estimate']:.0%} [{w['low']:.0%}, {w['high']:.0%}]"
                f" of {w['blocks']} blocks")
    print(f"  load {p['load']:g}: {v['verdict']} {v['estimate']:.0%} [{v['low']:.0%}, {v['high']:.0%}]"
          f" of {v['blocks']} blocks ({v['requests']} responses, {v.get('pooled') or 0:.0%} within the bound){more}")
ends = [str(int((c.get(e) or {}).get("load", 0))) for e in ("max_passing", "first_failing")]
open(sys.argv[1] + ".ends", "w").write(" ".join(ends) + "\n")
PY
  read -r passing failing <"$work/cap$slots.json.ends"
  for load in "$passing" "$failing"; do
    if [ "$load" = 0 ]; then continue; fi
    read -r p lo hi n < <(p90 "$(run_at "confirm$slots-$load" "$url" "$load" "$confirm")")
    verdict="$(python3 -c "
lo, hi, b = $lo, $hi, $bound
print('meets' if hi < b else 'fails' if lo > b else 'cannot tell')")"
    echo "confirm at $load in flight: p90 TTFT $p ms [$lo, $hi] (n $n) against ${bound} ms: $verdict" \
      "(load average $(load))"
  done
  stop_server
done
