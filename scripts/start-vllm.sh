#!/usr/bin/env bash
# Starts a real vLLM server (CPU build, tiny random-weight Gemma 3 with the real tokenizer) on a free
# loopback port, installing it first if needed (scripts/setup-vllm.sh), and waits until it answers.
#
#   scripts/start-vllm.sh [--vision] [--prefix-caching] [--lora] [extra `vllm serve` flags…]
#
# --vision serves the tiny vision-language Gemma 3 instead (up to 4 images a prompt); its start
# takes longer (a multimodal warm-up), so it waits up to 900 s by default.
#
# Prints on stdout, once `GET /v1/models` answers:
#   VLLM_URL=http://127.0.0.1:PORT
#   VLLM_PID=<pid>        (kill it with SIGTERM: the whole server, engine processes included, stops)
#   VLLM_MODEL=<the served model's id>
#   VLLM_LOG=<log file>
#   VLLM_ADAPTERS=adapter-a,adapter-b   (with --lora: the LoRA adapters it serves)
# Exits non-zero with the log's tail on stderr if the server dies or does not answer in time.
#
# Defaults: prefix caching off (--prefix-caching turns it on), context 2,048 tokens, bfloat16, eager
# mode, prompt-token details (cached_tokens) in usage, 2 GiB of KV cache; and, where the installed
# vLLM knows them, per-request timing metrics on the final usage chunk
# (--enable-per-request-metrics) and each request's X-Request-Id said back in the response head
# (--enable-request-id-headers). --lora serves the two random-weight LoRA adapters that
# scripts/setup-vllm.sh builds, adapter-a and adapter-b (--enable-lora, rank 8, both on the batch at
# once), beside the model.
# Environment: LLMLOAD_VLLM_LIFETIME (seconds before the server is killed, default 3600),
# LLMLOAD_VLLM_START_TIMEOUT (seconds to wait for it, default 300), LLMLOAD_VLLM_LOG (log file,
# default a new file under ${TMPDIR:-/tmp}), VLLM_CPU_KVCACHE_SPACE (GiB, default 2).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

vision=
if [ "${1:-}" = --vision ]; then
  vision=1
  shift
fi
prefix_caching=--no-enable-prefix-caching
# With prefix caching, VLLM_SERVER_DEV_MODE=1 serves /reset_prefix_cache (--reset-prefix-cache).
dev_mode="${VLLM_SERVER_DEV_MODE:-0}"
lora=false
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix-caching) prefix_caching=--enable-prefix-caching; dev_mode=1 ;;
    --lora) lora=true ;;
    *) break ;;
  esac
  shift
done

paths="$("$here/setup-vllm.sh")"
py="$(sed -n 's/^VLLM_PYTHON=//p' <<<"$paths")"
launcher="$(sed -n 's/^VLLM_LAUNCHER=//p' <<<"$paths")"
model="$(sed -n 's/^VLLM_MODEL=//p' <<<"$paths")"
if [ -n "$vision" ]; then
  model="$(sed -n 's/^VLLM_VISION_MODEL=//p' <<<"$paths")"
  set -- --limit-mm-per-prompt '{"image": 4}' "$@"
fi
adapters="$(sed -n 's/^VLLM_ADAPTERS=//p' <<<"$paths")"
lora_flags=()
if $lora; then
  lora_flags=(--enable-lora --max-lora-rank 8 --max-loras 2
    --lora-modules "adapter-a=$adapters/adapter-a" "adapter-b=$adapters/adapter-b")
fi

lifetime="${LLMLOAD_VLLM_LIFETIME:-3600}"
start_timeout="${LLMLOAD_VLLM_START_TIMEOUT:-$([ -n "$vision" ] && echo 900 || echo 300)}"
logfile="${LLMLOAD_VLLM_LOG:-$(mktemp "${TMPDIR:-/tmp}/llmload-vllm.XXXXXX.log")}"

# The optional flags this vLLM accepts, read from its argument definitions without importing it.
optional=()
args_file="$("$py" -c 'import importlib.util, os; spec = importlib.util.find_spec("vllm"); print(os.path.join(spec.submodule_search_locations[0], "entrypoints", "launchers", "cli_args.py"))' 2>/dev/null || true)"
for flag in per_request_metrics request_id_headers; do
  if [ -f "$args_file" ] && grep -q "enable_${flag}: bool" "$args_file"; then
    optional+=("--enable-${flag//_/-}")
  fi
done

port="$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
url="http://127.0.0.1:$port"

# timeout(1) leads its own process group: at the deadline it kills the whole group (API server and
# engine processes), and a SIGTERM sent to it is passed on to the group, which vLLM handles cleanly.
VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-2}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
  VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 VLLM_SERVER_DEV_MODE="$dev_mode" \
  timeout --signal=KILL "$lifetime" "$py" "$launcher" serve "$model" \
  --host 127.0.0.1 --port "$port" --max-model-len 2048 --dtype bfloat16 --enforce-eager \
  --enable-prompt-tokens-details "$prefix_caching" ${optional[@]+"${optional[@]}"} \
  ${lora_flags[@]+"${lora_flags[@]}"} "$@" \
  </dev/null >"$logfile" 2>&1 &
pid=$!

# shellcheck source=scripts/lib/await-server.sh
. "$here/lib/await-server.sh"
await_server vLLM "$pid" "$url/v1/models" "$logfile" "$start_timeout"

served="$(curl -sf "$url/v1/models" | "$py" -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])')"
echo "VLLM_URL=$url"
echo "VLLM_PID=$pid"
echo "VLLM_MODEL=$served"
echo "VLLM_LOG=$logfile"
if $lora; then
  echo "VLLM_ADAPTERS=adapter-a,adapter-b"
fi
