#!/usr/bin/env bash
# Starts LiteLLM's proxy, an OpenAI-compatible gateway, on a free loopback port in front of one
# upstream OpenAI-compatible server, installing it first if needed (scripts/setup-litellm.sh), and
# waits until it answers.
#
#   LITELLM_MASTER_KEY=sk-… scripts/start-litellm.sh UPSTREAM_BASE_URL MODEL_NAME
#
# UPSTREAM_BASE_URL is the upstream's base (e.g. http://127.0.0.1:8080, a llama-server or vLLM);
# MODEL_NAME is the model the gateway lists and routes, sent upstream as is (`openai/MODEL_NAME`,
# `api_base` UPSTREAM_BASE_URL/v1). Clients authenticate with the master key, which the proxy reads
# from the environment (`os.environ/LITELLM_MASTER_KEY` in the config): it is written nowhere.
# LiteLLM wants it to start with `sk-`.
#
# Prints on stdout, once the proxy answers:
#   LITELLM_URL=http://127.0.0.1:PORT
#   LITELLM_PID=<pid>        (kill it with SIGTERM: the proxy stops)
#   LITELLM_CONFIG=<the proxy config written for this run>
#   LITELLM_LOG=<log file>
# Exits non-zero with the log's tail on stderr if the proxy dies or does not answer in time.
#
# The config passes llmload's engine fields (`ignore_eos`, `min_tokens`, `cache_prompt`, …) on to
# the upstream: they are not OpenAI parameters, and `drop_params: false` keeps LiteLLM from
# dropping them (docs/engines.md, "Through a gateway"). The proxy runs offline: the model cost map
# and the other data LiteLLM would fetch come from the package, and no telemetry is sent.
# Environment: LLMLOAD_LITELLM_LIFETIME (seconds before the proxy is killed, default 3600),
# LLMLOAD_LITELLM_START_TIMEOUT (seconds to wait for it, default 120), LLMLOAD_LITELLM_DIR (folder
# for the config and the log, default a new folder under ${TMPDIR:-/tmp}).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

if [ $# -ne 2 ]; then
  echo "usage: LITELLM_MASTER_KEY=sk-… $0 UPSTREAM_BASE_URL MODEL_NAME" >&2
  exit 2
fi
upstream="${1%/}" model="$2"
if [ -z "${LITELLM_MASTER_KEY:-}" ]; then
  echo "start-litellm: set LITELLM_MASTER_KEY (the key clients must send; sk-…)" >&2
  exit 2
fi

litellm="$("$here/setup-litellm.sh" | sed -n 's/^LITELLM=//p')"
py="$(dirname "$litellm")/python"

lifetime="${LLMLOAD_LITELLM_LIFETIME:-3600}"
start_timeout="${LLMLOAD_LITELLM_START_TIMEOUT:-120}"
dir="${LLMLOAD_LITELLM_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/llmload-litellm.XXXXXX")}"
mkdir -p "$dir"
config="$dir/config.yaml" logfile="$dir/litellm.log"

# JSON is YAML: the model name and URL are quoted by Python, whatever they hold.
"$py" - "$upstream" "$model" >"$config" <<'PY'
import json, sys
upstream, model = sys.argv[1], sys.argv[2]
config = {
    "model_list": [{
        "model_name": model,
        "litellm_params": {
            "model": "openai/" + model,
            "api_base": upstream + "/v1",
            "api_key": "none",
        },
        # LiteLLM's GET /health asks every model for a completion: one token, not a whole context.
        # /v1/messages goes upstream as it came (llama-server and vLLM serve it), not translated
        # to the Responses API, which would drop llmload's engine fields and ask for at least 16
        # tokens.
        "model_info": {"health_check_max_tokens": 1, "supported_endpoints": ["/v1/messages"]},
    }],
    "litellm_settings": {"drop_params": False, "telemetry": False},
    "general_settings": {"master_key": "os.environ/LITELLM_MASTER_KEY"},
}
print(json.dumps(config, indent=2))
PY

port="$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
url="http://127.0.0.1:$port"

# Offline: LiteLLM's data files from the package, not the network; no telemetry, no admin UI.
# timeout(1) kills the proxy at the deadline, and passes a SIGTERM sent to it on to the proxy.
LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS=True \
  LITELLM_LOCAL_BLOG_POSTS=True LITELLM_LOCAL_POLICY_TEMPLATES=True \
  LITELLM_LOCAL_AUTOROUTER_PRESETS=True LITELLM_TELEMETRY=False DISABLE_ADMIN_UI=True \
  DO_NOT_TRACK=1 NO_PROXY='*' \
  timeout --signal=KILL "$lifetime" "$litellm" --config "$config" --host 127.0.0.1 --port "$port" \
  </dev/null >"$logfile" 2>&1 &
pid=$!

# shellcheck source=scripts/lib/await-server.sh
. "$here/lib/await-server.sh"
await_server LiteLLM "$pid" "$url/health/liveliness" "$logfile" "$start_timeout"

echo "LITELLM_URL=$url"
echo "LITELLM_PID=$pid"
echo "LITELLM_CONFIG=$config"
echo "LITELLM_LOG=$logfile"
