# shellcheck shell=bash
# Sourced by the start-*.sh scripts: waits until a server started in the background answers.
#
#   await_server NAME PID URL LOGFILE TIMEOUT_S
#
# PID is the server's timeout(1) process, which leads its process group. Returns once
# `GET URL` succeeds; exits 1 with the log's tail on stderr if the server exits first or does not
# answer within TIMEOUT_S (then it is sent SIGTERM, which timeout(1) passes on to the group, and
# SIGKILL after 10 s).
await_server() {
  local name="$1" pid="$2" url="$3" logfile="$4" timeout_s="$5" state
  local deadline=$((SECONDS + timeout_s))
  fail() {
    echo "start: $name $*; last lines of $logfile:" >&2
    tail -n 40 "$logfile" >&2
    exit 1
  }
  until curl -sf -o /dev/null --max-time 5 "$url"; do
    # Running means present and not a zombie awaiting wait.
    if ! state="$(ps -o stat= -p "$pid" 2>/dev/null)" || [ "${state:0:1}" = Z ]; then
      wait "$pid" || true
      fail "exited before answering"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      kill -TERM "$pid" 2>/dev/null || true
      sleep 10
      kill -KILL -- "-$pid" 2>/dev/null || true
      fail "did not answer GET $url within ${timeout_s}s"
    fi
    sleep 0.5
  done
}
