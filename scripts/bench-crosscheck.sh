#!/usr/bin/env bash
# Cross-check: the same workload measured by another client (`vllm bench serve`), by llmload, and
# by the server's own clock (vLLM's /metrics histograms).
#
#   scripts/bench-crosscheck.sh
#
# Starts the CPU vLLM (scripts/start-vllm.sh: tiny random-weight Gemma 3, prefix caching off) on a
# free loopback port, sends one untimed request so neither client meets a cold server, then runs,
# back to back:
#   (a) `vllm bench serve`: random dataset, fixed input and output length (--random-range-ratio 0),
#       --ignore-eos, --max-concurrency C, --num-prompts N, completions endpoint, no warmups;
#   (b) `llmload run --api completions --arrival closed-continuous --concurrency C --requests N`,
#       same input and output tokens, no warmups.
# It scrapes /metrics before and after each client and prints one table: each client's figures
# and the server's for the same requests (means from the histograms' _sum/_count deltas; its p50
# and p99 only as the histogram bucket that holds them, lower–upper bound). Then `llmload
# reconcile` of the two runs: vLLM's figures, llmload's records under vLLM's definitions,
# llmload's own, and the terms of each gap.
# Prints figures; asserts nothing about them. Exits non-zero if a client fails.
#
# Environment (defaults): CROSSCHECK_INPUT (128) input tokens, CROSSCHECK_OUTPUT (32) output
# tokens, CROSSCHECK_CONCURRENCY (4), CROSSCHECK_REQUESTS (24), CROSSCHECK_SEED (1),
# CROSSCHECK_CLIENT_TIMEOUT (600) seconds allowed to each client, CROSSCHECK_ORDER (vllm-first;
# llmload-first swaps the two runs, to see what the order does), CROSSCHECK_KEEP (unset: the work
# folder is removed at exit; set: kept and its path printed), plus start-vllm.sh's variables
# (LLMLOAD_VLLM_START_TIMEOUT, VLLM_CPU_KVCACHE_SPACE, …).
set -euo pipefail
cd "$(dirname "$0")/.."

input="${CROSSCHECK_INPUT:-128}"
output="${CROSSCHECK_OUTPUT:-32}"
concurrency="${CROSSCHECK_CONCURRENCY:-4}"
requests="${CROSSCHECK_REQUESTS:-24}"
seed="${CROSSCHECK_SEED:-1}"
client_timeout="${CROSSCHECK_CLIENT_TIMEOUT:-600}"
order="${CROSSCHECK_ORDER:-vllm-first}"
case "$order" in vllm-first | llmload-first) ;; *) echo "CROSSCHECK_ORDER: vllm-first or llmload-first, not '$order'" >&2; exit 2 ;; esac
for pair in "CROSSCHECK_INPUT=$input" "CROSSCHECK_OUTPUT=$output" \
  "CROSSCHECK_CONCURRENCY=$concurrency" "CROSSCHECK_REQUESTS=$requests" \
  "CROSSCHECK_SEED=$seed" "CROSSCHECK_CLIENT_TIMEOUT=$client_timeout"; do
  case "${pair#*=}" in
    "" | *[!0-9]* | 0) echo "${pair%%=*}: a positive whole number, not '${pair#*=}'" >&2; exit 2 ;;
  esac
done

log() { echo "crosscheck: $*" >&2; }

log "building llmload (release)"
nice -n 10 cargo build --release --quiet -p llmload --bin llmload
bin="$PWD/target/release/llmload"

paths="$(scripts/setup-vllm.sh)"
py="$(sed -n 's/^VLLM_PYTHON=//p' <<<"$paths")"
launcher="$(sed -n 's/^VLLM_LAUNCHER=//p' <<<"$paths")"
model_dir="$(sed -n 's/^VLLM_MODEL=//p' <<<"$paths")"

work="$(mktemp -d "${TMPDIR:-/tmp}/llmload-crosscheck.XXXXXX")"
server_pid=""
stop_server() {
  [ -n "$server_pid" ] || return 0
  # SIGTERM to start-vllm.sh's timeout(1), which passes it on to the server's process group.
  kill -TERM "$server_pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.2; done
  kill -KILL -- "-$server_pid" 2>/dev/null || true
  server_pid=""
}
# A client runs in the background under its own deadline, so that a signal to this script is
# handled at once (the trap), not after the client ends; timeout(1) leads its own process group
# and passes a SIGTERM on to it.
client_pid=""
run_client() {
  timeout --signal=KILL "$client_timeout" "$@" &
  client_pid=$!
  local rc=0
  wait "$client_pid" || rc=$?
  client_pid=""
  return "$rc"
}
cleanup() {
  if [ -n "$client_pid" ]; then kill -TERM "$client_pid" 2>/dev/null || true; fi
  stop_server
  if [ -n "${CROSSCHECK_KEEP:-}" ]; then log "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The server's own deadline, should this script die without its trap: start-up, both clients, and
# five minutes to spare.
lifetime=$((${LLMLOAD_VLLM_START_TIMEOUT:-300} + 2 * client_timeout + 300))
log "starting vLLM (scripts/start-vllm.sh)"
LLMLOAD_VLLM_LIFETIME="${LLMLOAD_VLLM_LIFETIME:-$lifetime}" LLMLOAD_VLLM_LOG="$work/vllm.log" \
  scripts/start-vllm.sh >"$work/server.env"
server_pid="$(sed -n 's/^VLLM_PID=//p' "$work/server.env")"
url="$(sed -n 's/^VLLM_URL=//p' "$work/server.env")"
served="$(sed -n 's/^VLLM_MODEL=//p' "$work/server.env")"
log "vLLM at $url"

scrape() {
  curl -sf --max-time 30 "$url/metrics" >"$work/$1.prom" || { log "GET $url/metrics failed"; exit 1; }
}

# One untimed request first: the first requests after start-up pay for lazy initialisation, and
# whichever client ran first would carry it.
curl -sf --max-time 300 "$url/v1/completions" -H 'Content-Type: application/json' \
  -d "{\"model\": \"$served\", \"prompt\": \"Hello\", \"max_tokens\": 8, \"stream\": false}" \
  >/dev/null || { log "the untimed first request failed"; exit 1; }

run_vllm_bench() {
  log "(a) vllm bench serve: input $input, output $output, concurrency $concurrency, $requests prompts"
  scrape vllm-before
  run_client env HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
    "$py" "$launcher" bench serve \
    --backend openai --base-url "$url" --endpoint /v1/completions \
    --model "$served" --tokenizer "$model_dir" \
    --dataset-name random --random-input-len "$input" --random-output-len "$output" \
    --random-range-ratio 0 --ignore-eos --max-concurrency "$concurrency" --num-prompts "$requests" \
    --request-rate inf --num-warmups 0 --seed "$seed" --disable-tqdm \
    --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,99 \
    --save-result --save-detailed --result-dir "$work" --result-filename vllm-bench.json \
    </dev/null >"$work/vllm-bench.log" 2>&1 || { log "vllm bench serve failed:"; tail -n 30 "$work/vllm-bench.log" >&2; exit 1; }
  scrape vllm-after
}

run_llmload() {
  log "(b) llmload run: the same shape, closed-continuous"
  scrape llmload-before
  run_client "$bin" run --url "$url" --api completions \
    --input-tokens "$input" --output-tokens "$output" --arrival closed-continuous \
    --concurrency "$concurrency" --requests "$requests" --warmup 0 --seed "$seed" \
    --telemetry off --out "$work/llmload" --name crosscheck -q \
    </dev/null >"$work/llmload.log" 2>&1 || { log "llmload run failed:"; tail -n 30 "$work/llmload.log" >&2; exit 1; }
  scrape llmload-after
}

if [ "$order" = llmload-first ]; then run_llmload; run_vllm_bench; else run_vllm_bench; run_llmload; fi
stop_server

"$py" - "$work" "$input" "$output" "$concurrency" "$requests" <<'PY'
import glob, json, math, os, re, sys

work, want_in, want_out, conc, n = sys.argv[1], *map(int, sys.argv[2:6])

# --- the server's /metrics -------------------------------------------------------------------
line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$')
def parse(name):
    series = {}
    for line in open(os.path.join(work, name + ".prom")):
        m = line_re.match(line.strip())
        if not m or line.startswith("#"):
            continue
        metric, labels, value = m.group(1), m.group(2) or "", float(m.group(3))
        le = re.search(r'le="([^"]+)"', labels)
        key = (metric, le.group(1) if le else None)
        series[key] = series.get(key, 0.0) + value  # summed over engines and finish reasons
    return series

def delta(before, after):
    return {k: v - before.get(k, 0.0) for k, v in after.items()}

def hist(d, base):
    count, total = d.get((base + "_count", None), 0.0), d.get((base + "_sum", None), 0.0)
    buckets = sorted(((float(le), v) for (m, le), v in d.items() if m == base + "_bucket"),
                     key=lambda b: b[0])
    return count, total, buckets

def quantile(buckets, q):
    # The bucket (lower, upper] that holds the rank: all a histogram can say of a quantile.
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank, lower = q * buckets[-1][1], 0.0
    for upper, cum in buckets:
        if cum >= rank:
            return (lower, upper)
        lower = upper
    return None

def server(phase):
    d = delta(parse(phase + "-before"), parse(phase + "-after"))
    out = {}
    for key, base in (("ttft", "vllm:time_to_first_token_seconds"),
                      ("itl", "vllm:inter_token_latency_seconds"),
                      ("tpot", "vllm:request_time_per_output_token_seconds"),
                      ("e2e", "vllm:e2e_request_latency_seconds"),
                      ("queue", "vllm:request_queue_time_seconds"),
                      ("prefill", "vllm:request_prefill_time_seconds")):
        count, total, buckets = hist(d, base)
        if count > 0:
            out[key + "_mean"] = 1000 * total / count
            for q in (50, 99):
                v = quantile(buckets, q / 100)
                if v is not None:
                    out[f"{key}_p{q}"] = (1000 * v[0], 1000 * v[1])
    out["completed"] = d.get(("vllm:request_success_total", None), 0.0)
    out["prompt_tokens"] = d.get(("vllm:prompt_tokens_total", None), 0.0)
    out["cached_tokens"] = d.get(("vllm:prompt_tokens_cached_total", None), 0.0)
    out["output_tokens"] = d.get(("vllm:generation_tokens_total", None), 0.0)
    return out

# --- vllm bench serve's saved result ---------------------------------------------------------
vb = json.load(open(os.path.join(work, "vllm-bench.json")))
ins, outs = vb.get("input_lens", []), vb.get("output_lens", [])
vbench = {
    "completed": vb["completed"], "failed": vb.get("failed", 0),
    "prompt_min": min(ins) if ins else None, "prompt_max": max(ins) if ins else None,
    "out_min": min(outs) if outs else None, "out_max": max(outs) if outs else None,
    "prompt_tokens": vb.get("total_input_tokens"), "output_tokens": vb.get("total_output_tokens"),
    "throughput_run": vb.get("output_throughput"),
}
for m in ("ttft", "itl", "tpot", "e2el"):
    k = "e2e" if m == "e2el" else m
    for stat, src in (("mean", "mean"), ("p50", "p50"), ("p99", "p99")):
        if f"{src}_{m}_ms" in vb:
            vbench[f"{k}_{stat}"] = vb[f"{src}_{m}_ms"]

# --- llmload's attempt -----------------------------------------------------------------------
attempt = glob.glob(os.path.join(work, "llmload", "crosscheck", "*", "summary.json"))[0]
summary = json.load(open(attempt))
case = summary["cases"][0]
records = [json.loads(l) for l in open(os.path.join(os.path.dirname(attempt), "requests.jsonl"))]
ok = [r for r in records if r["phase"] == "measured" and r["status"] == "ok"]
ll = {"completed": case["counts"]["ok"],
      "failed": sum(case["counts"][k] for k in ("invalid", "error", "cancelled"))}
for k in ("ttft", "itl", "tpot", "e2e"):
    dist = case.get(k + "_ms") or {}
    for stat, src in (("mean", "mean"), ("p50", "median"), ("p99", "p99")):
        if dist.get(src) is not None:
            ll[f"{k}_{stat}"] = dist[src]
if ok:
    ll["prompt_min"] = min(r["prompt_tokens"] for r in ok)
    ll["prompt_max"] = max(r["prompt_tokens"] for r in ok)
    ll["out_min"] = min(r["output_tokens"] for r in ok)
    ll["out_max"] = max(r["output_tokens"] for r in ok)
    ll["prompt_tokens"] = sum(r["prompt_tokens"] for r in ok)
    ll["output_tokens"] = sum(r["output_tokens"] for r in ok)
    ll["cached_tokens"] = sum(r.get("cached_tokens") or 0 for r in ok)
    span = max(r["done_s"] for r in ok) - min(r["sent_s"] for r in ok)
    ll["throughput_run"] = ll["output_tokens"] / span if span > 0 else None
    # vllm bench ends a request at its last token chunk, llmload at the final event ([DONE]).
    ll["e2e_last_token_mean"] = sum(r["event_ms"][-1] for r in ok if r["event_ms"]) / len(ok)
    verified = sum(1 for r in ok if r.get("verified"))
    ll["verified"] = f"{verified} of {len(ok)}"
load = case.get("load") or {}
ll["throughput_window"] = load.get("throughput_tps")

sv_vb, sv_ll = server("vllm"), server("llmload")
for s in (sv_vb, sv_ll):
    if s["completed"]:
        s["prompt_per_req"] = s["prompt_tokens"] / s["completed"]
        s["out_per_req"] = s["output_tokens"] / s["completed"]

def ms(v):
    if isinstance(v, tuple):
        lo, hi = v
        return f"> {lo:,.0f} ms" if math.isinf(hi) else f"{lo:,.0f}–{hi:,.0f} ms"
    return "–" if v is None else f"{v:,.1f} ms"
def num(v, fmt="{:,.0f}"):
    return "–" if v is None else fmt.format(v)
def rng(a, b):
    return "–" if a is None else (f"{a}" if a == b else f"{a}–{b}")

rows = [
    ("requests completed (failed)", f"{vbench['completed']} ({vbench['failed']})",
     f"{ll['completed']} ({ll['failed']})", num(sv_vb["completed"]), num(sv_ll["completed"])),
    (f"prompt tokens per request (asked {want_in})", rng(vbench["prompt_min"], vbench["prompt_max"]),
     rng(ll.get("prompt_min"), ll.get("prompt_max")),
     num(sv_vb.get("prompt_per_req"), "{:,.2f}"), num(sv_ll.get("prompt_per_req"), "{:,.2f}")),
    (f"output tokens per request (asked {want_out})", rng(vbench["out_min"], vbench["out_max"]),
     rng(ll.get("out_min"), ll.get("out_max")),
     num(sv_vb.get("out_per_req"), "{:,.2f}"), num(sv_ll.get("out_per_req"), "{:,.2f}")),
    ("cached prompt tokens", "not checked", num(ll.get("cached_tokens")),
     num(sv_vb["cached_tokens"]), num(sv_ll["cached_tokens"])),
    ("responses verified (counts exact, no cache)", "not checked", ll.get("verified", "–"), "", ""),
]
for key, label in (("ttft", "TTFT"), ("itl", "ITL"), ("tpot", "TPOT"), ("e2e", "E2E")):
    for stat in ("mean", "p50", "p99"):
        if key in ("tpot", "e2e") and stat == "p99":
            continue
        rows.append((f"{label} {stat}", ms(vbench.get(f"{key}_{stat}")), ms(ll.get(f"{key}_{stat}")),
                     ms(sv_vb.get(f"{key}_{stat}")), ms(sv_ll.get(f"{key}_{stat}"))))
rows += [
    ("E2E mean to the last token", ms(vbench.get("e2e_mean")), ms(ll.get("e2e_last_token_mean")), "", ""),
    ("server queue time mean", "", "", ms(sv_vb.get("queue_mean")), ms(sv_ll.get("queue_mean"))),
    ("server prefill time mean", "", "", ms(sv_vb.get("prefill_mean")), ms(sv_ll.get("prefill_mean"))),
    ("output tokens/s, first send to last completion", num(vbench["throughput_run"], "{:,.1f}"),
     num(ll.get("throughput_run"), "{:,.1f}"), "", ""),
    ("output tokens/s, llmload's measurement window", "", num(ll.get("throughput_window"), "{:,.1f}"), "", ""),
]
head = ("metric", "vllm bench serve", "llmload", "server /metrics during vllm bench",
        "server /metrics during llmload")
print(f"\nInput {want_in} tokens, output {want_out} tokens, concurrency {conc}, {n} requests. "
      "Server: means from the histograms' sum/count deltas; p50 and p99 as the histogram "
      "bucket that holds them.\n")
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for r in rows:
    print("| " + " | ".join(r) + " |")
PY

# The same two runs reconciled by llmload itself: vLLM's figures, llmload's records under vLLM's
# definitions, llmload's own, and the terms between them.
echo
"$bin" reconcile "$(ls -d "$work/llmload/crosscheck"/*/ | head -1)" "$work/vllm-bench.json"
