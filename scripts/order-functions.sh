#!/usr/bin/env bash
# Writes crates/llmload/link/functions.txt: the release binary's functions that a load runs,
# hottest first, which the build lays out together at the start of the binary's code (see
# crates/llmload/build.rs). Run it after changes that add or rename functions on the load's path,
# then build again; names it lists that a build no longer has are skipped.
#
#   scripts/order-functions.sh
#
# Runs this build's release binary under valgrind's callgrind (about 50 times slower) against the
# zero-cost simulator: a closed loop of 64 streams on the completions API and on the chat API
# (20 rounds, 128-token prompts, 256 tokens a response), and an open loop of 300 Poisson arrivals
# at 100/s; every view is written as a run writes it. Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 1; }
cargo build --release -q -p llmload
bin="$PWD/target/release/llmload"
work="$(mktemp -d)"
sim_pid=""
trap '[ -z "$sim_pid" ] || kill "$sim_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
"$bin" sim --port 0 --profile cpu-tiny --schedule zero-cost >"$work/sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 600); do grep -q "listening on" "$work/sim.log" && break; sleep 0.05; done
url="$(sed -n 's|^listening on ||p' "$work/sim.log")"
[ -n "$url" ] || { echo "the simulator did not start" >&2; exit 1; }
common=(--url "$url" --input-tokens 128 --timeout 600s --telemetry off --seed 1 --out "$work/out" -q)
profile() {
  local name="$1"
  shift
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/$name.cg" \
    "$bin" run "${common[@]}" --name "$name" "$@" >/dev/null 2>"$work/$name.log"
}
profile completions --api completions --concurrency 64 --rounds 20 --warmup 1 --output-tokens 256
profile chat --api chat --concurrency 64 --rounds 20 --warmup 1 --output-tokens 256
profile open --arrival poisson --rate 100 --requests 300 --output-tokens 64
python3 - "$work" crates/llmload/link/functions.txt "$work"/*.cg <<'PY'
import collections, re, sys
# Each function of the binary that ran, by its own instructions over the three runs.
work, out, files = sys.argv[1], sys.argv[2], sys.argv[3:]
cost = collections.Counter()
for path in files:
    objects, names = {}, {}
    here = current = None
    after_call = False
    for line in open(path):
        line = line.rstrip("\n")
        m = re.match(r"^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            called, what, key, name = m.groups()
            table = objects if what == "ob" else names
            if name:
                table[key] = name
            if called:
                continue
            if what == "ob":
                here = objects.get(key)
            else:
                current = names[key] if here and here.endswith("/llmload") else None
                if current is not None:
                    cost[current] += 0
            continue
        if line.startswith("calls="):
            after_call = True
            continue
        if after_call:
            after_call = False
            continue
        parts = line.split()
        if current and len(parts) >= 2 and parts[1].isdigit():
            cost[current] += int(parts[1])
names = [n for n, _ in sorted(cost.items(), key=lambda kv: (-kv[1], kv[0])) if n.startswith("_")]
with open(out, "w") as f:
    f.write("\n".join(names) + "\n")
print(f"{out}: {len(names)} functions")
PY
