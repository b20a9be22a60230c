#!/usr/bin/env bash
# Starts a real vLLM server (CPU build, tiny random-weight Gemma 3 with the real tokenizer) on a free
# loopback port, installing it first if needed (scripts/setup-vllm.sh), and waits until it answers.
#
#   scripts/start-vllm.sh [--prefix-caching] [extra `vllm serve` flags…]
#
# Prints on stdout, once `GET /v1/models` answers:
#   VLLM_URL=http://127.0.0.1:PORT
#   VLLM_PID=<pid>        (kill it with SIGTERM: the whole server, engine processes included, stops)
#   VLLM_MODEL=<the served model's id>
#   VLLM_LOG=<log file>
# Exits non-zero with the log's tail on stderr if the server dies or does not answer in time.
#
# Defaults: prefix caching off (--prefix-caching turns it on), context 2,048 tokens, bfloat16, eager
# mode, prompt-token details (cached_tokens) in usage, 2 GiB of KV cache.
# Environment: LLMLOAD_VLLM_LIFETIME (seconds before the server is killed, default 3600),
# LLMLOAD_VLLM_START_TIMEOUT (seconds to wait for it, default 300), LLMLOAD_VLLM_LOG (log file,
# default a new file under ${TMPDIR:-/tmp}), VLLM_CPU_KVCACHE_SPACE (GiB, default 2).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

prefix_caching=--no-enable-prefix-caching
if [ "${1:-}" = --prefix-caching ]; then
  prefix_caching=--enable-prefix-caching
  shift
fi

paths="$("$here/setup-vllm.sh")"
py="$(sed -n 's/^VLLM_PYTHON=//p' <<<"$paths")"
launcher="$(sed -n 's/^VLLM_LAUNCHER=//p' <<<"$paths")"
model="$(sed -n 's/^VLLM_MODEL=//p' <<<"$paths")"

lifetime="${LLMLOAD_VLLM_LIFETIME:-3600}"
start_timeout="${LLMLOAD_VLLM_START_TIMEOUT:-300}"
logfile="${LLMLOAD_VLLM_LOG:-$(mktemp "${TMPDIR:-/tmp}/llmload-vllm.XXXXXX.log")}"

port="$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
url="http://127.0.0.1:$port"

# timeout(1) leads its own process group: at the deadline it kills the whole group (API server and
# engine processes), and a SIGTERM sent to it is passed on to the group, which vLLM handles cleanly.
VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-2}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
  VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
  timeout --signal=KILL "$lifetime" "$py" "$launcher" serve "$model" \
  --host 127.0.0.1 --port "$port" --max-model-len 2048 --dtype bfloat16 --enforce-eager \
  --enable-prompt-tokens-details "$prefix_caching" "$@" </dev/null >"$logfile" 2>&1 &
pid=$!

alive() { # the server's timeout(1) process is running (not gone, not a zombie awaiting wait)
  local state
  state="$(ps -o stat= -p "$pid" 2>/dev/null)" && [ "${state:0:1}" != Z ]
}

fail() {
  echo "start-vllm: $*; last lines of $logfile:" >&2
  tail -n 40 "$logfile" >&2
  exit 1
}

deadline=$((SECONDS + start_timeout))
until curl -sf -o /dev/null --max-time 5 "$url/v1/models"; do
  alive || { wait "$pid" || true; fail "vLLM exited before answering"; }
  if [ "$SECONDS" -ge "$deadline" ]; then
    kill -TERM "$pid" 2>/dev/null || true # timeout(1) passes it on to the server's process group
    sleep 10
    kill -KILL -- "-$pid" 2>/dev/null || true
    fail "vLLM did not answer GET $url/v1/models within ${start_timeout}s"
  fi
  sleep 1
done

served="$(curl -sf "$url/v1/models" | "$py" -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])')"
echo "VLLM_URL=$url"
echo "VLLM_PID=$pid"
echo "VLLM_MODEL=$served"
echo "VLLM_LOG=$logfile"
