#!/usr/bin/env bash
# Benchmark: what llmload itself costs, against a simulator that costs nothing.
#
#   scripts/bench-client.sh [--peer guidellm|aiperf] [--quick] [--live-only]
#   scripts/bench-client.sh --against REV [--pairs N] [--quick]
#
# --against REV: every figure as a ratio to another build, in one run. REV (a commit, tag or
# branch) is built once in a git worktree with the release profile, its binary cached under
# target/bench-against/COMMIT/ (with this build's debug-info setting, which does not change the
# code, so that the compiled dependencies are shared). Then N pairs (default 3) alternate REV and the
# working tree, in a random order within each pair, on the same zero-cost simulator (this
# build's, on CPU 1; llmload on CPU 0): completions and chat at concurrency 64. It prints, for
# each figure, both builds' medians (min–max over the pairs) and the ratio working tree / REV of
# each pair (median, min–max), with the load average. Then, in the same run, the TTFT bias at
# 1,000 streams and the peak RSS at 10,000 streams all open at once (complete or not, and how
# many were open together, from the records), the same number of
# alternated pairs each; then each build's start-up (`--version`, 30 alternated runs) and binary
# size. Nothing else runs in this mode.
#
# Builds in release mode and starts `llmload sim --schedule zero-cost` (every token at once, one
# SSE event per token, written as fast as the connection takes them) pinned to one core with
# taskset, llmload pinned to the other. For the
# completions and chat APIs at concurrency 1, 64, 1,024 and 10,000 (128-token prompts, 256-token
# answers, one token per event) it prints llmload's CPU time (user + sys of the process, from
# /usr/bin/time) per token event (from requests.jsonl, warmups included), token events per
# second over the measured rounds, peak RSS, and RSS per in-flight stream (peak RSS above the
# concurrency-1 run, divided by the concurrency), and once more at concurrency 64 with every
# event on a write of its own (`zero-cost:write=each`, one receive per event). Then, against
# `--schedule fixed` (first token exactly 100 ms after the request's last byte arrived, then one
# every 20 ms), it prints llmload's TTFT and ITL bias (measured − scheduled) at concurrency 1,
# 1,000 and 10,000, with the self-check's read lag (how late llmload read what the kernel had
# stamped, kept out of the latencies). At 10,000 the schedule is 1,500 ms to the first token and
# 500 ms between tokens: opening 10,000 connections takes the client's core about a second, and
# the one-core simulator must keep its own schedule.
#
# --peer installs that Python client (pip, into a virtualenv under ~/.cache/llmload/) and runs it
# on the same workload against the same simulator, printing its CPU per token event and TTFT
# bias next to llmload's. --memory SECONDS then runs scripts/bench-memory.sh for that long (an
# open loop at 100 requests/s × 256 tokens, RSS over time). Then the live view's own cost: the
# same load on a terminal (tmux) with the live view and with --no-live, CPU per token event of
# each and the CPU of the view's own thread (--live-only: that alone). --quick runs fewer rounds.
# Prints figures; asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

peer=""
quick=0
memory=""
live_only=0
against=""
pairs=3
while [ $# -gt 0 ]; do
  case "$1" in
    --peer) peer="${2:?--peer takes guidellm or aiperf}"; shift 2 ;;
    --quick) quick=1; shift ;;
    --live-only) live_only=1; shift ;;
    --memory) memory="${2:?--memory takes a number of seconds}"; shift 2 ;;
    --against) against="${2:?--against takes a git revision}"; shift 2 ;;
    --pairs) pairs="${2:?--pairs takes a number}"; shift 2 ;;
    *) echo "usage: $0 [--peer guidellm|aiperf] [--memory SECONDS] [--quick] [--live-only] | --against REV [--pairs N] [--quick]" >&2; exit 2 ;;
  esac
done
case "$memory" in ""|*[!0-9]*) [ -z "$memory" ] || { echo "--memory: a number of seconds, not $memory" >&2; exit 2; } ;; esac
case "$pairs" in ""|*[!0-9]*|0) echo "--pairs: a number of pairs from 1, not $pairs" >&2; exit 2 ;; esac
case "$peer" in ""|guidellm|aiperf) ;; *) echo "--peer: guidellm or aiperf, not $peer" >&2; exit 2 ;; esac
[ "$(nproc)" -ge 2 ] || { echo "needs two CPUs (one for the simulator, one for llmload)" >&2; exit 1; }

# Builds REV once (a worktree, removed after) into target/ (sharing the compiled dependencies),
# and keeps its binary under target/bench-against/COMMIT/; sets $old_bin and $old_name.
build_against() {
  local commit
  commit="$(git rev-parse --verify --quiet "$1^{commit}")" || { echo "--against: $1 is not a commit of this repository" >&2; exit 2; }
  old_name="$(git rev-parse --short=7 "$commit")"
  local dir="$PWD/target/bench-against/$commit"
  old_bin="$dir/llmload"
  [ -x "$old_bin" ] && return 0
  echo "building $old_name (release, once; cached in $dir)…" >&2
  mkdir -p "$dir"
  git worktree prune
  rm -rf "$dir/src"
  git worktree add --detach --quiet "$dir/src" "$commit"
  # With this build's debug-info setting, so that the dependencies compiled for it serve.
  local debug
  debug="$(awk '/^\[/ { release = ($0 == "[profile.release]") } release && $1 == "debug" { print $3 }' Cargo.toml)"
  (cd "$dir/src" && CARGO_TARGET_DIR="$OLDPWD/target" CARGO_PROFILE_RELEASE_DEBUG="${debug:-false}" \
    cargo build --release --quiet -p llmload --bin llmload)
  cp "target/release/llmload" "$old_bin.partial" && mv "$old_bin.partial" "$old_bin"
  git worktree remove --force "$dir/src"
  # The working tree's binary must be linked again over REV's.
  touch crates/llmload/src/main.rs
}
[ -z "$against" ] || build_against "$against"

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
  for _ in $(seq 600); do grep -q "listening on" "$work/sim.log" && break; sleep 0.05; done
  url="$(sed -n 's|^listening on ||p' "$work/sim.log")"
  [ -n "$url" ] || { echo "the simulator did not start: $(cat "$work/sim.log")" >&2; exit 1; }
}

# Runs llmload ($client, else this build) on CPU 0: NAME API CONCURRENCY ROUNDS OUTPUT_TOKENS;
# leaves NAME.time, NAME/.
run_llmload() {
  local name="$1" api="$2" concurrency="$3" rounds="$4" output="$5"
  /usr/bin/time -f "%U %S %M" -o "$work/$name.time" taskset -c 0 "${client:-$bin}" run --url "$url" \
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

# Prints TTFT and ITL bias against the fixed schedule, and how late llmload read what the kernel
# had stamped (token times are the stamps): NAME CONCURRENCY TTFT_MS ITL_MS.
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
lag = "–"
for f in glob.glob(folder + "/*/summary.json"):
    r = (json.load(open(f)).get("client_check") or {}).get("read_lag")
    if r:
        lag = f"{r['mean_ms']:.3f} / {r['max_ms']:.1f}"
print(f"{concurrency:>6} {len(ok):>6} {ttft:>6.0f}/{itl:<4.0f} {pct(t, .5):>9.3f} {pct(t, .99):>9.3f} "
      f"{pct(g, .5):>9.3f} {pct(g, .99):>9.3f} {lag:>16}   (ms)")
PY
}

echo "llmload $("$bin" --version | awk '{print $2}') on $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# --against: REV and the working tree alternated pair by pair; every figure as a ratio.
if [ -n "$against" ]; then
  rounds=$((quick ? 10 : 20))
  echo
  echo "$old_name against the working tree: $pairs pairs, each build's run in a random order within a pair; zero-cost simulator (this build's) on CPU 1, llmload on CPU 0; concurrency 64 × $rounds rounds, 128-token prompts, 256 tokens per answer, one token per event."
  # alternate PREFIX I API CONCURRENCY ROUNDS OUTPUT: pair I, both builds' runs in a random
  # order; each run named PREFIX-BUILD-I (BUILD old or new).
  alternate() {
    local prefix="$1" i="$2" order build client
    shift 2
    if [ $((RANDOM % 2)) = 0 ]; then order="old new"; else order="new old"; fi
    for build in $order; do
      if [ "$build" = old ]; then client="$old_bin"; else client="$bin"; fi
      client="$client" run_llmload "$prefix-$build-$i" "$@"
    done
  }
  start_sim zero-cost
  for i in $(seq "$pairs"); do
    for api in completions chat; do
      alternate "ab-$api" "$i" "$api" 64 "$rounds" 256
    done
  done
  python3 - "$work" "$pairs" "$old_name" <<'PY'
import glob, json, statistics, sys
work, pairs, old_name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def run(build, api, i):
    name = f"{work}/ab-{api}-{build}-{i}"
    user, sys_s, rss_kb = open(name + ".time").read().split()[-3:]
    records = [json.loads(l) for f in glob.glob(name + "/*/requests.jsonl") for l in open(f) if l.strip()]
    events = sum(r["token_events"] for r in records)
    ok = sum(r["phase"] == "measured" and r["status"] == "ok" for r in records)
    return {"cpu": (float(user) + float(sys_s)) * 1e6 / max(events, 1), "rss": int(rss_kb) / 1024, "ok": ok}
runs = {(b, a, i): run(b, a, i) for b in ("old", "new") for a in ("completions", "chat") for i in range(1, pairs + 1)}
def spread(xs, unit, digits):
    return f"{statistics.median(xs):.{digits}f}{unit} ({min(xs):.{digits}f}–{max(xs):.{digits}f})"
print(f"{'figure':<34} {old_name + ' (REV)':>26} {'working tree':>26} {'ratio, median (min–max)':>26}")
for api in ("completions", "chat"):
    for key, label, unit, digits in (("cpu", "CPU per token event", " µs", 2), ("rss", "peak RSS", " MiB", 1)):
        old = [runs["old", api, i][key] for i in range(1, pairs + 1)]
        new = [runs["new", api, i][key] for i in range(1, pairs + 1)]
        ratios = [n / o for n, o in zip(new, old) if o > 0]
        print(f"{api + ', ' + label:<34} {spread(old, unit, digits):>26} {spread(new, unit, digits):>26} "
              f"{spread(ratios, '×', 2):>26}")
ok = {b: sorted({runs[b, a, i]["ok"] for a in ("completions", "chat") for i in range(1, pairs + 1)}) for b in ("old", "new")}
print(f"responses complete per run: {old_name} {ok['old']}, working tree {ok['new']}; ratio = working tree / {old_name}, one per pair")
PY
  # TTFT bias at 1,000 streams against the fixed schedule, the same pairs; then 10,000 streams
  # (one round, 256 tokens) once per build: complete, and its peak RSS.
  echo
  echo "TTFT bias (measured − scheduled 100 ms) at 1,000 streams, 3 rounds × 32 tokens (3,000 requests a run, so that a p99 rests on 30), the fixed-schedule simulator; then 10,000 streams × 256 tokens, all open at once (first token at 1.5 s, then one every 20 ms); $pairs alternated pairs each."
  start_sim "fixed:ttft_ms=100,itl_ms=20"
  for i in $(seq "$pairs"); do alternate bias "$i" completions 1000 3 32; done
  # Every stream open at once: 1.5 s to the first token (longer than opening 10,000 connections
  # takes), then 256 tokens 20 ms apart. Against zero-cost, streams end while others are still
  # being opened, and the peak measured how many happened to overlap (3,000–7,000), not 10,000.
  start_sim "fixed:ttft_ms=1500,itl_ms=20"
  for i in $(seq "$pairs"); do alternate big "$i" completions 10000 1 256; done
  python3 - "$work" "$pairs" "$old_name" <<'PY'
import glob, json, statistics, sys
work, pairs, old_name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def records(name):
    return [json.loads(l) for f in glob.glob(f"{work}/{name}/*/requests.jsonl") for l in open(f) if l.strip()]
def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")
def bias(build, i):
    ok = [r for r in records(f"bias-{build}-{i}") if r["phase"] == "measured" and r["status"] == "ok"]
    t = [r["ttft_ms"] - 100 for r in ok]
    return pct(t, .5), pct(t, .99), len(ok)
b = {(build, i): bias(build, i) for build in ("old", "new") for i in range(1, pairs + 1)}
for k, label in ((0, "TTFT bias p50"), (1, "TTFT bias p99")):
    old = [b["old", i][k] for i in range(1, pairs + 1)]
    new = [b["new", i][k] for i in range(1, pairs + 1)]
    ratios = [n / o for n, o in zip(new, old) if o > 0]
    fmt = lambda xs, u: f"{statistics.median(xs):.2f}{u} ({min(xs):.2f}–{max(xs):.2f})"
    print(f"{'1,000 streams, ' + label:<34} {fmt(old, ' ms'):>26} {fmt(new, ' ms'):>26} {fmt(ratios, '×') if ratios else '–':>26}")
print(f"responses complete per bias run: {old_name} {sorted({b['old', i][2] for i in range(1, pairs + 1)})}, "
      f"working tree {sorted({b['new', i][2] for i in range(1, pairs + 1)})} (of 3,000)")
def overlap(rs):
    # The most streams of one phase open at once, from their send and end times.
    most = 0
    for phase in ("warmup", "measured"):
        marks = sorted((t, d) for r in rs if r["phase"] == phase and r.get("sent_s") is not None
                       for t, d in ((r["sent_s"], 1), (r.get("done_s") or r["sent_s"], -1)))
        level = 0
        for _, d in marks:
            level += d
            most = max(most, level)
    return most
def big_run(build, i):
    rs = records(f"big-{build}-{i}")
    return (int(open(f"{work}/big-{build}-{i}.time").read().split()[-1]) / 1024,
            sum(r["phase"] == "measured" and r["status"] == "ok" for r in rs), overlap(rs))
big = {(build, i): big_run(build, i) for build in ("old", "new") for i in range(1, pairs + 1)}
old = [big["old", i][0] for i in range(1, pairs + 1)]
new = [big["new", i][0] for i in range(1, pairs + 1)]
fmt = lambda xs, u: f"{statistics.median(xs):.1f}{u} ({min(xs):.1f}–{max(xs):.1f})"
ratio = lambda xs: f"{statistics.median(xs):.2f}× ({min(xs):.2f}–{max(xs):.2f})"
print(f"{'10,000 streams, peak RSS':<34} {fmt(old, ' MiB'):>26} {fmt(new, ' MiB'):>26} "
      f"{ratio([n / o for n, o in zip(new, old)]):>26}")
print(f"responses complete per 10,000-stream run: {old_name} {sorted({big['old', i][1] for i in range(1, pairs + 1)})}, "
      f"working tree {sorted({big['new', i][1] for i in range(1, pairs + 1)})}; most streams open at once: "
      f"{old_name} {sorted({big['old', i][2] for i in range(1, pairs + 1)})}, "
      f"working tree {sorted({big['new', i][2] for i in range(1, pairs + 1)})}")
PY
  # Start-up and size, where users compare: `--version` (the process's whole life), each
  # build alternately, 30 times; the binaries' sizes.
  echo
  python3 - "$old_bin" "$bin" "$old_name" <<'PY'
import os, statistics, subprocess, sys, time
old, new, old_name = sys.argv[1:4]
times = {old: [], new: []}
for _ in range(30):
    for b in (old, new):
        t = time.perf_counter()
        subprocess.run([b, "--version"], stdout=subprocess.DEVNULL, check=True)
        times[b].append((time.perf_counter() - t) * 1e3)
fmt = lambda xs: f"{statistics.median(xs):.2f} ms ({min(xs):.2f}–{max(xs):.2f})"
print(f"{'start-up, --version (30 each)':<34} {fmt(times[old]):>26} {fmt(times[new]):>26} "
      f"{statistics.median(times[new]) / statistics.median(times[old]):>25.2f}×")
size = lambda b: os.path.getsize(b) / 1e6
print(f"{'binary size':<34} {size(old):>23.1f} MB {size(new):>23.1f} MB {size(new) / size(old):>25.2f}×")
PY
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi
if [ "$live_only" = 0 ]; then
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
start_sim zero-cost:write=each
run_llmload zc-each-64 completions 64 "$((quick ? 10 : 20))" 256
zero_cost_row zc-each-64 "completions¹" 64
echo "¹ zero-cost:write=each: every event on a write of its own, so one receive per event (the harshest case)."
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "Fixed-schedule simulator (scheduled TTFT/ITL shown); completions API, 128-token prompts."
printf '%6s %6s %11s %9s %9s %9s %9s %16s\n' concurrency ok schedule "TTFT p50" "TTFT p99" "ITL p50" "ITL p99" "read lag mean/max"
for spec in "1 20 32 100 20" "1000 1 32 100 20" "10000 1 4 1500 500"; do
  read -r concurrency rounds output ttft itl <<<"$spec"
  start_sim "fixed:ttft_ms=$ttft,itl_ms=$itl"
  name="fixed-$concurrency"
  run_llmload "$name" completions "$concurrency" "$rounds" "$output"
  bias_row "$name" "$concurrency" "$ttft" "$itl"
done
echo "bias = measured − scheduled; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

fi

echo
# The live view's own cost. The same continuous load (concurrency 64, completions API, 128-token
# prompts, 256-token answers, against zero-cost) runs on a terminal (a tmux pane), with the live
# view, with --no-live (the progress line), and with --no-live and --metrics-listen (scraped every
# second) in turn; for each run, llmload's CPU per token event
# (user + sys of the process, /usr/bin/time), and for the view's runs the CPU of its own thread
# (the /proc task named llmload-live: utime + stime, read every 0.2 s while it runs, the last
# reading before it ended).
if command -v tmux >/dev/null 2>&1; then
  seconds=$((quick ? 8 : 20)); pairs=$((quick ? 1 : 3))
  echo "Live view on a terminal (tmux), closed-continuous 64 streams for ${seconds} s against zero-cost, completions API; ${pairs} run(s) each, alternating."
  start_sim zero-cost
  live_run() { # NAME FLAG…: runs llmload in a tmux pane; leaves NAME.time, NAME.view (ticks)
    local name="$1"; shift
    local session="llmload-bench-$$-$name"
    tmux new-session -d -s "$session" -x 160 -y 50 \
      "sh -c 'echo \$\$ >$work/$name.pid; exec /usr/bin/time -f \"%U %S %M\" -o $work/$name.time taskset -c 0 $bin run --url $url --api completions --arrival closed-continuous --concurrency 64 --duration ${seconds}s --warmup 1 --input-tokens 128 --output-tokens 256 --telemetry off --seed 1 --out $work --name $name $*'; touch $work/$name.done; sleep 1"
    local ticks="" child="" polls=0
    while [ ! -e "$work/$name.done" ]; do
      # With --metrics-listen, a scrape a second, as a Prometheus set to scrape every second would.
      polls=$((polls + 1))
      if [ -n "${scrape_port:-}" ] && [ $((polls % 5)) = 0 ]; then
        curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$scrape_port/metrics" || true
      fi
      if [ -z "$child" ] && [ -s "$work/$name.pid" ]; then
        child="$(pgrep -P "$(cat "$work/$name.pid")" 2>/dev/null || true)"
      fi
      for task in /proc/${child:-0}/task/*; do
        if [ "$(cat "$task/comm" 2>/dev/null)" = llmload-live ]; then
          ticks="$(awk '{print $14 + $15}' "$task/stat" 2>/dev/null || echo "$ticks")"
        fi
      done
      sleep 0.2
    done
    echo "$ticks" >"$work/$name.view"
    tmux kill-session -t "$session" 2>/dev/null || true
  }
  for i in $(seq "$pairs"); do
    live_run "live-view-$i"
    live_run "live-line-$i" --no-live
    scrape_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    live_run "live-metrics-$i" --no-live --metrics-listen "127.0.0.1:$scrape_port"
    scrape_port=""
  done
  python3 - "$work" "$pairs" "$seconds" "$(getconf CLK_TCK)" <<'PY'
import glob, json, sys
work, pairs, seconds, hz = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
def run(name):
    user, sys_s, _ = open(f"{work}/{name}.time").read().split()[-3:]
    records = [json.loads(l) for f in glob.glob(f"{work}/{name}/*/requests.jsonl") for l in open(f) if l.strip()]
    events = sum(r["token_events"] for r in records)
    return (float(user) + float(sys_s)) * 1e6 / max(events, 1), events
view = [run(f"live-view-{i}") for i in range(1, pairs + 1)]
line = [run(f"live-line-{i}") for i in range(1, pairs + 1)]
metrics = [run(f"live-metrics-{i}") for i in range(1, pairs + 1)]
ticks = [open(f"{work}/live-view-{i}.view").read().strip() for i in range(1, pairs + 1)]
fmt = lambda runs: ", ".join(f"{us:.2f}" for us, _ in runs)
print(f"CPU per token event, live view: {fmt(view)} µs; --no-live: {fmt(line)} µs; "
      f"--no-live with /metrics scraped every second: {fmt(metrics)} µs "
      f"({sum(e for _, e in view + line + metrics):,} token events in all)")
for i, t in enumerate(ticks, 1):
    if not t:
        print(f"  run {i}: no thread named llmload-live was seen (the view was not drawn, or ended first)")
        continue
    ms = float(t) / hz * 1e3
    print(f"  run {i}: the view's thread used {ms:.0f} ms of CPU over the {seconds:.0f} s load and its setup "
          f"({ms / 10 / seconds:.2f} % of a core; /proc ticks of {1e3 / hz:.0f} ms)")
PY
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
else
  echo "Live view: not measured (tmux is not installed: it gives the run a terminal)."
fi

if [ -n "$memory" ]; then
  echo
  stop_sim
  scripts/bench-memory.sh "$memory" 100 256
fi

[ -n "$peer" ] || exit 0

# The peer, side by side on the same simulator and cores: CPU per token event from the
# difference of two runs (64 and 320 requests of 256 tokens at concurrency 64), so that start-up
# (a Python interpreter importing its libraries) cancels out; TTFT bias at concurrency 64 against
# the fixed schedule. The peer counts tokens with a word-level tokenizer built locally from the
# bundled corpus, so nothing but the package itself is downloaded.
cache="${XDG_CACHE_HOME:-$HOME/.cache}/llmload"
venv="$cache/peer-$peer"
if [ ! -x "$venv/bin/$peer" ]; then
  echo "installing $peer into $venv (pip)…"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "$peer"
fi
if [ ! -f "$cache/tokenizer/tokenizer.json" ]; then
  "$venv/bin/python" - crates/llmload/corpus/declaration.txt "$cache/tokenizer" <<'PY'
import sys
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast
lines = open(sys.argv[1]).read().split("\n")
tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
tokenizer.train_from_iterator(lines, trainers.WordLevelTrainer(special_tokens=["[UNK]", "<eos>"]))
PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", eos_token="<eos>").save_pretrained(sys.argv[2])
PY
fi

# Runs the peer on CPU 0: NAME REQUESTS OUTPUT_TOKENS; leaves NAME.time and NAME.json.
run_peer() {
  local name="$1" requests="$2" output="$3"
  case "$peer" in
    guidellm)
      HF_HUB_OFFLINE=1 /usr/bin/time -f "%U %S %M" -o "$work/$name.time" taskset -c 0 \
        "$venv/bin/guidellm" run --backend "kind=openai_http,target=$url" \
        --profile kind=concurrent,streams=64 \
        --data "kind=synthetic_text,prompt_tokens=128,output_tokens=$output" \
        --tokenizer "kind=huggingface_auto,model=$cache/tokenizer" \
        --constraint "kind=max_requests,count=$requests" \
        --output "kind=json,path=$work/$name.json" --disable-console >"$work/$name.log" 2>&1 || true ;;
    aiperf)
      # Not HF_HUB_OFFLINE: in that mode AIPerf takes the tokenizer for a Hub repository name
      # and refuses a local folder. A folder needs no network either way.
      /usr/bin/time -f "%U %S %M" -o "$work/$name.time" taskset -c 0 \
        "$venv/bin/aiperf" profile --url "$url" --endpoint-type completions --streaming \
        --model tiny-sim --tokenizer "$cache/tokenizer" --concurrency 64 \
        --request-count "$requests" --synthetic-input-tokens-mean 128 \
        --output-tokens-mean "$output" --extra-inputs ignore_eos:true \
        --artifact-dir "$work/$name" >"$work/$name.log" 2>&1 || true ;;
  esac
}

# Median TTFT (ms) and successful requests of a peer run: NAME.
peer_ttft() {
  python3 - "$work/$1" "$peer" <<'PY'
import glob, json, sys
base, peer = sys.argv[1:3]
try:
    if peer == "guidellm":
        metric = json.load(open(base + ".json"))["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]
        print(metric["median"], metric["count"])
    else:
        data = json.load(open(glob.glob(base + "/**/profile_export_aiperf.json", recursive=True)[0]))
        print(data["time_to_first_token"]["p50"], data["request_count"]["avg"])
except Exception as error:
    print("nan 0")
PY
}

# User + system seconds of a run (the last line: a failed command's note comes first).
cpu() { tail -1 "$work/$1.time" | awk '{print $1 + $2}'; }
echo "Side by side with $peer ($("$venv/bin/pip" show "$peer" 2>/dev/null | sed -n 's/^Version: //p')), concurrency 64, completions API, 128-token prompts, 256-token answers."
start_sim zero-cost
run_llmload peer-l1 completions 64 1 256
run_llmload peer-l5 completions 64 5 256
run_peer peer-p1 64 256
run_peer peer-p5 320 256
read -r _ p1_ok <<<"$(peer_ttft peer-p1)"
read -r p5_ttft p5_ok <<<"$(peer_ttft peer-p5)"
llmload_us="$(python3 -c "print(($(cpu peer-l5) - $(cpu peer-l1)) * 1e6 / (256 * 256))")"
peer_us="$(python3 -c "print(($(cpu peer-p5) - $(cpu peer-p1)) * 1e6 / max(1, ($p5_ok - $p1_ok) * 256))")"
printf 'CPU per token event: llmload %.2f µs, %s %.2f µs (%.0f×); %s median TTFT against zero-cost: %.1f ms\n' \
  "$llmload_us" "$peer" "$peer_us" "$(python3 -c "print($peer_us / max($llmload_us, 1e-9))")" "$peer" "$p5_ttft"
start_sim "fixed:ttft_ms=100,itl_ms=20"
run_llmload peer-lf completions 64 2 32
run_peer peer-pf 128 32
read -r pf_ttft _ <<<"$(peer_ttft peer-pf)"
lf_ttft="$(python3 - "$work/peer-lf" <<'PY'
import glob, json, statistics, sys
records = [json.loads(l) for f in glob.glob(sys.argv[1] + "/*/requests.jsonl") for l in open(f) if l.strip()]
print(statistics.median(r["ttft_ms"] for r in records if r["phase"] == "measured" and r["status"] == "ok"))
PY
)"
printf 'TTFT bias at concurrency 64 against the fixed schedule (100 ms): llmload %+.3f ms, %s %+.3f ms\n' \
  "$(python3 -c "print($lf_ttft - 100)")" "$peer" "$(python3 -c "print($pf_ttft - 100)")"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
