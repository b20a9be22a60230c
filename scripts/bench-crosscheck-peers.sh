#!/usr/bin/env bash
# Cross-check against the other clients: the same workload measured by AIPerf, by GuideLLM and by
# llmload on one llama-server, then `llmload reconcile` of llmload's attempt with each tool's
# saved result: the other tool's figures, llmload's records under its definitions, llmload's own,
# and the terms of each gap (definition, workload, measurement).
#
#   scripts/bench-crosscheck-peers.sh
#
# Installs the tools first (scripts/setup-peer-tools.sh; AIPERF= or GUIDELLM= point at others,
# PEERS=aiperf runs one). Starts llama-server (scripts/start-llama-server.sh, 4 slots) on a free
# loopback port, sends one untimed request, then runs, back to back, on /v1/completions with the
# tiny Gemma 3's tokenizer (the same vocabulary as the served Gemma 3 270M):
#   AIPerf:   synthetic prompts of PEERS_INPUT tokens, PEERS_OUTPUT output tokens (ignore_eos,
#             min_tokens), --concurrency PEERS_CONCURRENCY, --request-count PEERS_REQUESTS, one
#             warmup request;
#   GuideLLM: the same through its synthetic_text data, a concurrent profile of as many streams,
#             a max_requests constraint;
#   llmload:  run --api completions --arrival closed-continuous, the same shape, one warmup.
# Prints the reconciliations; asserts nothing about the figures. Exits non-zero if a client fails.
#
# Environment (defaults): PEERS (aiperf guidellm), PEERS_INPUT (64), PEERS_OUTPUT (16),
# PEERS_CONCURRENCY (2), PEERS_REQUESTS (12), PEERS_CLIENT_TIMEOUT (900) seconds allowed to each
# client, PEERS_KEEP (unset: the work folder is removed at exit; set: kept and its path printed).
set -euo pipefail
cd "$(dirname "$0")/.."

input="${PEERS_INPUT:-64}" output="${PEERS_OUTPUT:-16}"
concurrency="${PEERS_CONCURRENCY:-2}" requests="${PEERS_REQUESTS:-12}"
client_timeout="${PEERS_CLIENT_TIMEOUT:-900}"
read -r -a peers <<<"${PEERS:-aiperf guidellm}"
for pair in "PEERS_INPUT=$input" "PEERS_OUTPUT=$output" "PEERS_CONCURRENCY=$concurrency" \
  "PEERS_REQUESTS=$requests" "PEERS_CLIENT_TIMEOUT=$client_timeout"; do
  case "${pair#*=}" in
    "" | *[!0-9]* | 0) echo "${pair%%=*}: a positive whole number, not '${pair#*=}'" >&2; exit 2 ;;
  esac
done
log() { echo "crosscheck-peers: $*" >&2; }

log "building llmload (release)"
nice -n 10 cargo build --release --quiet -p llmload --bin llmload
bin="$PWD/target/release/llmload"
tokenizer="$(sed -n 's/^VLLM_MODEL=//p' <<<"$(scripts/setup-vllm.sh)")"
aiperf="${AIPERF:-}" guidellm="${GUIDELLM:-}"
for peer in "${peers[@]}"; do
  case "$peer" in
    aiperf) [ -n "$aiperf" ] || aiperf="$(scripts/setup-peer-tools.sh aiperf | sed -n 's/^AIPERF=//p')" ;;
    guidellm) [ -n "$guidellm" ] || guidellm="$(scripts/setup-peer-tools.sh guidellm | sed -n 's/^GUIDELLM=//p')" ;;
    *) log "PEERS: aiperf or guidellm, not '$peer'"; exit 2 ;;
  esac
done

work="$(mktemp -d "${TMPDIR:-/tmp}/llmload-peers.XXXXXX")"
server_pid=""
listener=""
cleanup() {
  # The server itself (start-llama-server.sh's timeout(1) leads a process group of its own),
  # then the script's group.
  if [ -n "$listener" ]; then kill -TERM "$listener" 2>/dev/null || true; fi
  if [ -n "$server_pid" ]; then kill -TERM -- "-$server_pid" 2>/dev/null || true; fi
  if [ -n "${PEERS_KEEP:-}" ]; then log "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "starting llama-server (scripts/start-llama-server.sh)"
setsid scripts/start-llama-server.sh --slots 4 --slot-context 2048 >"$work/server.log" 2>&1 &
server_pid=$!
url=""
for _ in $(seq 600); do
  url="$(grep -o 'http://127.0.0.1:[0-9]*' "$work/server.log" | head -1 || true)"
  [ -n "$url" ] && curl -sf --max-time 5 "$url/health" >/dev/null 2>&1 && break
  url=""; sleep 0.5
done
[ -n "$url" ] || { log "llama-server did not start:"; tail -n 20 "$work/server.log" >&2; exit 1; }
log "llama-server at $url"
listener="$(ss -ltnpH "sport = :${url##*:}" 2>/dev/null | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2 || true)"
curl -sf --max-time 300 "$url/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt": "Hello", "max_tokens": 8}' >/dev/null || { log "the untimed first request failed"; exit 1; }

client() {
  local name="$1"; shift
  log "$name"
  timeout --signal=KILL "$client_timeout" "$@" </dev/null >"$work/$name.log" 2>&1 ||
    { log "$name failed:"; tail -n 30 "$work/$name.log" >&2; exit 1; }
}

for peer in "${peers[@]}"; do
  case "$peer" in
    aiperf)
      client aiperf "$aiperf" profile --model gemma --url "$url" \
        --endpoint-type completions --streaming --tokenizer "$tokenizer" \
        --synthetic-input-tokens-mean "$input" --synthetic-input-tokens-stddev 0 \
        --output-tokens-mean "$output" --output-tokens-stddev 0 \
        --extra-inputs ignore_eos:true --extra-inputs "min_tokens:$output" \
        --concurrency "$concurrency" --request-count "$requests" --warmup-request-count 1 \
        --output-artifact-dir "$work/aiperf" --ui-type simple ;;
    guidellm)
      mkdir -p "$work/guidellm"
      client guidellm env HF_HUB_OFFLINE=1 "$guidellm" run \
        --backend "kind=openai_http,target=$url,model=gemma,request_format=/v1/completions" \
        --profile "kind=concurrent,streams=$concurrency" \
        --constraint "kind=max_requests,count=$requests" \
        --data "kind=synthetic_text,prompt_tokens=$input,output_tokens=$output" \
        --tokenizer "kind=huggingface_auto,model=$tokenizer" \
        --output "kind=json,path=$work/guidellm/benchmarks.json" --disable-console-interactive ;;
    *) log "PEERS: aiperf or guidellm, not '$peer'"; exit 2 ;;
  esac
done
client llmload "$bin" run --url "$url" --api completions --input-tokens "$input" \
  --output-tokens "$output" --arrival closed-continuous --concurrency "$concurrency" \
  --requests "$requests" --warmup 1 --telemetry off --out "$work/llmload" --name peers -q
attempt="$(ls -d "$work/llmload/peers"/*/ | head -1)"
for peer in "${peers[@]}"; do
  echo
  case "$peer" in
    aiperf) "$bin" reconcile "$attempt" "$work/aiperf" ;;
    guidellm) "$bin" reconcile "$attempt" "$work/guidellm/benchmarks.json" ;;
  esac
done
