#!/usr/bin/env bash
# Runs llmload's vLLM test group against a server that is already running, unchanged: a GPU vLLM,
# or SGLang (which speaks the same OpenAI dialect), started with prefix caching OFF.
#
#   scripts/vllm-tests.sh http://gpu-box:8000
#
# The prefix-cache test (a shared system prompt, then multi-turn chat sessions) needs prefix
# caching ON; give a second server for it with LLMLOAD_VLLM_CACHING_URL, or it runs against the
# same URL and reports what that server does.
# The client-tokenizer check needs the served model's tokenizer.json: give it with LLMLOAD_VLLM_TOKENIZER.
# The model-mix check needs two LoRA adapters served beside the model (--enable-lora --lora-modules
# a=PATH b=PATH): it sends 70/20/10 to the model and the first two adapters /v1/models lists, and
# fails, saying so, on a server that lists fewer.
# Without a URL, the tests start their own CPU vLLM (scripts/start-vllm.sh), as scripts/test.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
url="${1:-}"
if [ -n "$url" ]; then
  export LLMLOAD_VLLM_URL="$url"
fi
echo "vllm-tests: running the vLLM group against ${url:-a CPU vLLM started here}" >&2
if [ -n "${LLMLOAD_VLLM_CACHING_URL:-}" ]; then
  cargo test --workspace --test it -- --include-ignored --test-threads 1 \
    vllm::vllm_campaigns_open_loop_and_checks_without_prefix_caching
  LLMLOAD_VLLM_URL="$LLMLOAD_VLLM_CACHING_URL" cargo test --workspace --test it -- \
    --include-ignored --test-threads 1 vllm::vllm_prefix_cache_serves_the_shared_prompt
else
  cargo test --workspace --test it -- --include-ignored --test-threads 1 vllm::
fi
