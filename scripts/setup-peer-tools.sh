#!/usr/bin/env bash
# Installs the other benchmark clients that scripts/bench-crosscheck-peers.sh sets beside llmload:
# NVIDIA's AIPerf and GuideLLM (PyPI packages, versions pinned below), each into its own
# virtualenv in a cache folder that later runs reuse. Not part of the test command: GuideLLM
# brings PyTorch (about 6 GB), AIPerf about 1.2 GB.
#
#   scripts/setup-peer-tools.sh [aiperf] [guidellm]     # both when none is named
#
# Prints `AIPERF=<path>` and `GUIDELLM=<path>` (the commands) on stdout; progress on stderr.
# Cache folder: $LLMLOAD_CACHE, default ~/.cache/llmload (peers/aiperf, peers/guidellm).
set -euo pipefail

cache="${LLMLOAD_CACHE:-$HOME/.cache/llmload}"
python="${PYTHON:-python3}"
declare -A pins=([aiperf]="aiperf==0.13.0" [guidellm]="guidellm==0.8.1")
tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(aiperf guidellm)

log() { echo "setup-peer-tools: $*" >&2; }

for tool in "${tools[@]}"; do
  pin="${pins[$tool]:-}"
  [ -n "$pin" ] || { echo "setup-peer-tools: aiperf or guidellm, not '$tool'" >&2; exit 2; }
  venv="$cache/peers/$tool"
  mkdir -p "$cache/peers"
  exec 9>"$cache/peers/.setup-$tool.lock"
  flock 9
  if [ "$(cat "$venv/.llmload-stamp" 2>/dev/null)" != "$pin" ]; then
    [ -x "$venv/bin/python" ] || { log "creating virtualenv in $venv"; "$python" -m venv "$venv"; }
    log "installing $pin (minutes the first time)"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$pin" >&2
    echo "$pin" >"$venv/.llmload-stamp"
  fi
  exec 9>&-
  echo "$(tr '[:lower:]' '[:upper:]' <<<"$tool")=$venv/bin/$tool"
done
