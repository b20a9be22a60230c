#!/usr/bin/env bash
# Installs the real proxies the test suite puts between llmload and llama-server: Debian's nginx,
# HAProxy and Caddy (packages nginx, haproxy, caddy), where any is missing. No service is enabled
# or started: scripts/start-proxy.sh runs each binary itself, with a config of its own.
#
#   scripts/setup-proxies.sh
#
# Prints the binaries' paths: NGINX=…, HAPROXY=…, CADDY=…
set -euo pipefail

missing=()
for pair in nginx:nginx haproxy:haproxy caddy:caddy; do
  binary="${pair%%:*}" package="${pair#*:}"
  if ! PATH="$PATH:/usr/sbin:/sbin" command -v "$binary" >/dev/null 2>&1; then
    missing+=("$package")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup-proxies: installing ${missing[*]} (Debian packages)" >&2
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >&2
fi
for binary in nginx haproxy caddy; do
  path="$(PATH="$PATH:/usr/sbin:/sbin" command -v "$binary")"
  echo "$(tr '[:lower:]' '[:upper:]' <<<"$binary")=$path"
done
