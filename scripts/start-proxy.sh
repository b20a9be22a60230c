#!/usr/bin/env bash
# Starts a real reverse proxy (Debian's nginx, HAProxy or Caddy) on a free loopback port in front
# of one upstream server, installing it first if needed (scripts/setup-proxies.sh), with a config
# written into a folder of its own (its logs and temporary files there too: no system service, no
# system path), and waits until GET /health answers through it.
#
#   scripts/start-proxy.sh KIND UPSTREAM_BASE_URL
#
# KIND is one of (the configs are scripts/proxies/KIND.conf):
#   nginx           proxy_buffering off: each chunk passed on as it comes (a stream's way)
#   nginx-buffered  proxy_buffering on with small buffers, the upstream's X-Accel-Buffering ignored
#   caddy           reverse_proxy with flush_interval -1: each chunk flushed as it comes
#   haproxy         HAProxy's defaults: the stream sent on with MSG_MORE, which lets the kernel
#                   hold it for up to 200 ms (bursts where tokens come faster than that)
#   haproxy-nodelay the same with `option http-no-delay`: each chunk sent on at once
#   haproxy-hold    `http-response wait-for-body`: the whole response held, then sent at once
#                   (a gateway that inspects or rewrites bodies)
#
# Prints on stdout, once the proxy answers:
#   PROXY_URL=http://127.0.0.1:PORT
#   PROXY_PID=<pid>          (kill it with SIGTERM: the proxy stops)
#   PROXY_DIR=<its folder: config, logs, temporary files>
#   PROXY_ACCESS_LOG=<one line per request it passed on>
# Exits non-zero with the log's tail on stderr if the proxy dies or does not answer in time.
# Environment: LLMLOAD_PROXY_LIFETIME (seconds before the proxy is killed, default 3600),
# LLMLOAD_PROXY_START_TIMEOUT (seconds to wait for it, default 60), LLMLOAD_PROXY_DIR (its
# folder, default a new one under ${TMPDIR:-/tmp}).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

if [ $# -ne 2 ]; then
  echo "usage: $0 nginx|nginx-buffered|caddy|haproxy|haproxy-nodelay|haproxy-hold UPSTREAM_BASE_URL" >&2
  exit 2
fi
kind="$1" upstream="${2%/}"
template="$here/proxies/$kind.conf"
if [ ! -f "$template" ]; then
  echo "start-proxy: no proxy kind '$kind' (see scripts/proxies/)" >&2
  exit 2
fi
case "$upstream" in
  http://*) upstream_host="${upstream#http://}" ;;
  *) echo "start-proxy: UPSTREAM_BASE_URL must be http://HOST:PORT, not '$upstream'" >&2; exit 2 ;;
esac
case "$upstream_host" in
  */* | "" | *[!A-Za-z0-9.:-]*) echo "start-proxy: UPSTREAM_BASE_URL must be http://HOST:PORT, not '$upstream'" >&2; exit 2 ;;
esac

paths="$("$here/setup-proxies.sh")"
binary_of() { sed -n "s/^$1=//p" <<<"$paths"; }

lifetime="${LLMLOAD_PROXY_LIFETIME:-3600}"
start_timeout="${LLMLOAD_PROXY_START_TIMEOUT:-60}"
dir="${LLMLOAD_PROXY_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/llmload-proxy.XXXXXX")}"
mkdir -p "$dir"
case "$dir" in *[!A-Za-z0-9._/-]*) echo "start-proxy: its folder must be a plain path, not '$dir'" >&2; exit 2 ;; esac
logfile="$dir/proxy.log" access="$dir/access.log"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
url="http://127.0.0.1:$port"

config="$dir/$kind.conf"
sed -e "s|@PORT@|$port|g" -e "s|@UPSTREAM@|$upstream_host|g" -e "s|@DIR@|$dir|g" \
  "$template" >"$config"
: >"$access"

# timeout(1) kills the proxy at the deadline, and passes a SIGTERM sent to it on to the proxy.
case "$kind" in
  nginx*)
    mkdir -p "$dir/temp"
    timeout --signal=KILL "$lifetime" "$(binary_of NGINX)" -p "$dir" -c "$config" \
      -e "$dir/error.log" </dev/null >"$logfile" 2>&1 &
    ;;
  haproxy*)
    # -db: in the foreground; its log lines (one per request) go to its stdout, the access log.
    timeout --signal=KILL "$lifetime" "$(binary_of HAPROXY)" -db -f "$config" \
      </dev/null >"$access" 2>"$logfile" &
    ;;
  caddy)
    # Caddy keeps its data and config under these, never the home folder's.
    HOME="$dir" XDG_DATA_HOME="$dir" XDG_CONFIG_HOME="$dir" \
      timeout --signal=KILL "$lifetime" "$(binary_of CADDY)" run --config "$config" \
      --adapter caddyfile </dev/null >"$logfile" 2>&1 &
    ;;
esac
pid=$!

# shellcheck source=scripts/lib/await-server.sh
. "$here/lib/await-server.sh"
await_server "$kind" "$pid" "$url/health" "$logfile" "$start_timeout"

echo "PROXY_URL=$url"
echo "PROXY_PID=$pid"
echo "PROXY_DIR=$dir"
echo "PROXY_ACCESS_LOG=$access"
