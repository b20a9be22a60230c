#!/usr/bin/env bash
# Starts the reference llama-server (Gemma 3 270M Q4_K_M) on 127.0.0.1, installing it first if
# needed (scripts/setup-llama-server.sh). It prints "listening on http://127.0.0.1:PORT".
#
#   scripts/start-llama-server.sh [--slots N] [--slot-context TOKENS] [--port P] [extra llama-server flags…]
#
# Defaults: 4 slots of 8,704 tokens each (the reference campaign's server), port 0 (the OS picks a free one),
# metrics on. Stops after 4 hours at most, and on Ctrl-C (the server stays in the terminal's
# foreground process group, so the interrupt reaches it).
set -euo pipefail
cd "$(dirname "$0")/.."

slots=4 slot_context=8704 port=0
while [ $# -gt 0 ]; do
  case "$1" in
    --slots) slots="$2"; shift 2 ;;
    --slot-context) slot_context="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    *) break ;;
  esac
done

paths="$(scripts/setup-llama-server.sh)"
server="$(sed -n 's/^LLAMA_SERVER=//p' <<<"$paths")"
model="$(sed -n 's/^LLMLOAD_MODEL=//p' <<<"$paths")"
exec timeout --foreground 4h "$server" -m "$model" --host 127.0.0.1 --port "$port" \
  --parallel "$slots" --ctx-size "$((slots * slot_context))" --metrics "$@" 2>&1 |
  grep --line-buffered -E "listening on|error|failed"
