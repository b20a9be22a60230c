#!/usr/bin/env bash
# Installs an OpenAI-compatible gateway for llmload's end-to-end tests: LiteLLM's proxy (PyPI
# package `litellm[proxy]`, version pinned below), into its own virtualenv in a cache folder that
# later runs reuse. Serve it with scripts/start-litellm.sh.
#
# Prints one line on stdout, `LITELLM=<path of the litellm command>`; progress on stderr.
# Cache folder: $LLMLOAD_CACHE, default ~/.cache/llmload (venv in litellm/). The versions of every
# package are pinned in scripts/litellm/constraints.txt; a cold run downloads them (see
# docs/usage.md for the time and size), a second run takes well under a second.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cache="${LLMLOAD_CACHE:-$HOME/.cache/llmload}"
venv="$cache/litellm"
python="${PYTHON:-python3}"
uv_version=0.13.8
# prisma: without it LiteLLM 1.106.12 answers a request without a key with 500 instead of 401 (its
# error handler imports prisma, which only the heavy `extra-proxy` extra installs).
packages=("litellm[proxy]==1.106.12" "prisma==0.15.0")
constraints="$here/litellm/constraints.txt"

log() { echo "setup-litellm: $*" >&2; }

mkdir -p "$cache"
# One setup at a time (tests may start several gateways at once); the lock goes with the process.
exec 9>"$cache/.setup-litellm.lock"
flock 9

# The stamp records what was installed: a changed pin or constraint reinstalls.
stamp="$(printf '%s\n' "${packages[@]}" uv==$uv_version | cat - "$constraints" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$venv/.llmload-stamp" 2>/dev/null)" != "$stamp" ]; then
  if [ ! -x "$venv/bin/python" ]; then
    log "creating virtualenv in $venv"
    "$python" -m venv "$venv"
  fi
  if [ "$("$venv/bin/uv" --version 2>/dev/null | cut -d' ' -f2)" != "$uv_version" ]; then
    log "installing uv $uv_version"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "uv==$uv_version" >&2
  fi
  log "installing ${packages[*]}"
  "$venv/bin/uv" pip install --quiet --python "$venv/bin/python" --constraint "$constraints" \
    "${packages[@]}" >&2
  LITELLM_LOCAL_MODEL_COST_MAP=True "$venv/bin/litellm" --version >/dev/null 2>&1 || { log "litellm does not run after install"; exit 1; }
  echo "$stamp" >"$venv/.llmload-stamp"
fi

echo "LITELLM=$venv/bin/litellm"
