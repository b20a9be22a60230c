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

# Debian packages the tests use, installed where missing: Chromium renders report.html
# (headless, offline); tmux gives the terminal-view tests a real terminal of a set width;
# promtool (package prometheus) and the Prometheus client library for Python parse /metrics;
# npm brings Grafana's schema for the dashboard's check; podman and runc build and run the image.
need() { # need CHECK PACKAGE WHY: installs PACKAGE when the command CHECK fails
  if ! eval "$1" >/dev/null 2>&1; then
    echo "test.sh: installing $2 (Debian package) $3" >&2
    if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update -qq >&2 && $sudo apt-get install -y -qq "$2" >&2
  fi
}
need "command -v chromium" chromium "for the report test"
need "command -v tmux" tmux "for the terminal tests"
need "command -v promtool" prometheus "for the /metrics tests (promtool)"
need "/usr/bin/python3 -c 'import prometheus_client.openmetrics.parser'" python3-prometheus-client \
  "for the /metrics tests (its parsers)"
need "command -v npm" npm "for the dashboard's schema check (scripts/check-dashboard.sh)"
need "command -v podman" podman "for the image test (scripts/build-image.sh)"
need "command -v runc" runc "for the image test (podman's runtime)"

# Debian's nginx, HAProxy and Caddy: the real proxies of tests/it/proxies.rs, started by the tests
# themselves (scripts/start-proxy.sh), never as system services.
scripts/setup-proxies.sh >/dev/null

# A real vLLM (CPU build, tiny Gemma 3) for the vLLM test group, cached like llama-server.
scripts/setup-vllm.sh >/dev/null
# LiteLLM's proxy, an OpenAI-compatible gateway, for the gateway group; cached the same way.
scripts/setup-litellm.sh >/dev/null

cargo fmt --all -- --check
python3 scripts/check-layers.py >/dev/null
python3 scripts/check-sizes.py >/dev/null
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace --no-fail-fast
# The vLLM group: ignored by a plain `cargo test` (it needs vLLM, which takes minutes to start).
# The integration tests are one binary (tests/it): a group is selected by its module's path.
# `--workspace` as above, so that the dependencies' features are those of the build above and
# the test binary is not built again.
cargo test --workspace --test it -- --include-ignored --test-threads 1 vllm::
# vLLM's other endpoints: embeddings and rerank on pooling servers, images on a vision-language
# model; each starts servers of its own, so they are ignored by a plain `cargo test` too.
cargo test --workspace --test it -- --include-ignored --test-threads 1 vllm_pooling:: vllm_vision::
# The gateway group: LiteLLM in front of llama-server; ignored by a plain `cargo test` like vLLM's.
cargo test --workspace --test it -- --include-ignored --test-threads 1 gateway::
# The image built by scripts/build-image.sh and two shards run as its containers: ignored by a
# plain `cargo test` (it needs podman, installed above), run here, where it fails if podman cannot.
cargo test --workspace --test it -- --include-ignored deploy::image::
