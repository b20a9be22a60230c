#!/usr/bin/env bash
# The test command: installs what the tests need (llama-server and its model, a CPU vLLM with a
# tiny Gemma 3, LiteLLM's proxy, Chromium, nginx, HAProxy and Caddy; cached after the first
# run), then runs every gate — formatting, the module layers, lints, and all tests: unit,
# property, the simulator's, hostile servers, and end to end against the simulator, a real
# llama-server, a real vLLM, a real gateway (LiteLLM) and real proxies (nginx, HAProxy, Caddy)
# in front of llama-server.
set -euo pipefail
cd "$(dirname "$0")/.."

paths="$(scripts/setup-llama-server.sh)"
LLAMA_SERVER="$(sed -n 's/^LLAMA_SERVER=//p' <<<"$paths")"
LLMLOAD_MODEL="$(sed -n 's/^LLMLOAD_MODEL=//p' <<<"$paths")"
export LLAMA_SERVER LLMLOAD_MODEL

# Debian's Chromium renders report.html in a test (headless, offline).
if ! command -v chromium >/dev/null 2>&1; then
  echo "test.sh: installing chromium (Debian package) for the report test" >&2
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq >&2 && $sudo apt-get install -y -qq chromium >&2
fi

# tmux gives the terminal-view tests a real terminal of a set width.
if ! command -v tmux >/dev/null 2>&1; then
  echo "test.sh: installing tmux (Debian package) for the terminal tests" >&2
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq >&2 && $sudo apt-get install -y -qq tmux >&2
fi

# Debian's nginx, HAProxy and Caddy: the real proxies of tests/proxies.rs, started by the tests
# themselves (scripts/start-proxy.sh), never as system services.
scripts/setup-proxies.sh >/dev/null

# A real vLLM (CPU build, tiny Gemma 3) for the vLLM test group, cached like llama-server.
scripts/setup-vllm.sh >/dev/null
# LiteLLM's proxy, an OpenAI-compatible gateway, for the gateway group; cached the same way.
scripts/setup-litellm.sh >/dev/null

cargo fmt --all -- --check
python3 scripts/check-layers.py >/dev/null
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace --no-fail-fast
# The vLLM group: ignored by a plain `cargo test` (it needs vLLM, which takes minutes to start).
cargo test -p llmload --test vllm -- --include-ignored --test-threads 1
# The gateway group: LiteLLM in front of llama-server; ignored by a plain `cargo test` like vLLM's.
cargo test -p llmload --test gateway -- --include-ignored --test-threads 1
