#!/usr/bin/env bash
# llmload's figures through real proxies, against the server's own clock: the same case run
# straight to a llama-server and through each proxy of scripts/proxies/ in front of it (Debian's
# nginx, Caddy and HAProxy), every response's client-side times set beside the timings
# llama-server reports for that very response (`timings.prompt_ms`, `timings.predicted_ms`).
#
#   scripts/bench-proxies.sh [KIND…]        (default: direct nginx nginx-buffered caddy haproxy
#                                            haproxy-nodelay haproxy-hold)
#
# Starts llama-server (2 slots, 2 threads) and, per KIND, the proxy (scripts/start-proxy.sh; KIND
# `direct` is no proxy), then runs `llmload run` at concurrency 1 (BENCH_PROXIES_REQUESTS rounds of
# one request after one warmup, so that the server's timings are one request's alone), and prints
# one row per path:
#   - delivery: what llmload said of it (`streams`, or the responses that arrived in bursts of
#     those examined, with the mean events per burst and the stream a burst held back, `kept`
#     where too few for a path that buffers, so kept in the figures);
#   - TTFT − prefill: the median over responses of the client's TTFT less the server's prompt_ms
#     (what the HTTP exchange and the path add before the first token), ms;
#   - decode: the median over responses of (complete − TTFT) ÷ predicted_ms − 1, the client's
#     span from first to last token against the server's generation time, %;
#   - TPOT and ITL p50 as llmload reports them, the server's predicted_ms ÷ predicted_n beside
#     them, and the decode rate p50.
# Prints figures; asserts nothing about them (a timing is no test). Exits non-zero if a run fails.
#
# Environment (defaults): BENCH_PROXIES_INPUT (64), BENCH_PROXIES_OUTPUT (64),
# BENCH_PROXIES_REQUESTS (8), BENCH_PROXIES_KEEP (unset: the work folder is removed at exit; set:
# kept and its path printed), BENCH_PROXIES_SLOW (0; N: a slow server, llama-server on one thread
# pinned to one core that N busy loops share: 1 makes it about 18 tokens/s, 3 about 9, where
# HAProxy's 200 ms hold makes bursts of 2 or 3 tokens).
set -euo pipefail
cd "$(dirname "$0")/.."

input="${BENCH_PROXIES_INPUT:-64}"
output="${BENCH_PROXIES_OUTPUT:-64}"
requests="${BENCH_PROXIES_REQUESTS:-8}"
for pair in "BENCH_PROXIES_INPUT=$input" "BENCH_PROXIES_OUTPUT=$output" \
  "BENCH_PROXIES_REQUESTS=$requests"; do
  case "${pair#*=}" in
    "" | *[!0-9]* | 0) echo "${pair%%=*}: a positive whole number, not '${pair#*=}'" >&2; exit 2 ;;
  esac
done
kinds=("$@")
if [ "${#kinds[@]}" -eq 0 ]; then
  kinds=(direct nginx nginx-buffered caddy haproxy haproxy-nodelay haproxy-hold)
fi

log() { echo "bench-proxies: $*" >&2; }

log "building llmload (release)"
nice -n 10 cargo build --release --quiet -p llmload --bin llmload
bin="$PWD/target/release/llmload"
scripts/setup-proxies.sh >/dev/null

work="$(mktemp -d "${TMPDIR:-/tmp}/llmload-bench-proxies.XXXXXX")"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  if [ -n "${BENCH_PROXIES_KEEP:-}" ]; then log "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

paths="$(scripts/setup-llama-server.sh)"
server="$(sed -n 's/^LLAMA_SERVER=//p' <<<"$paths")"
model="$(sed -n 's/^LLMLOAD_MODEL=//p' <<<"$paths")"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
upstream="http://127.0.0.1:$port"
serve=(timeout --signal=KILL 3600 "$server" -m "$model" --host 127.0.0.1 --port "$port" -np 2
  -c 4096)
slow="${BENCH_PROXIES_SLOW:-0}"
case "$slow" in
  "" | *[!0-9]*) echo "BENCH_PROXIES_SLOW: a whole number, not '$slow'" >&2; exit 2 ;;
esac
if [ "$slow" -gt 0 ]; then
  # A slow server: one thread on the last core, which busy loops of this script's share.
  core=$(($(nproc) - 1))
  log "slow server: llama-server on one thread on core $core, beside $slow busy loop(s)"
  for _ in $(seq "$slow"); do
    taskset -c "$core" timeout --signal=KILL 3600 sh -c 'while :; do :; done' &
    pids+=($!)
  done
  serve=(taskset -c "$core" "${serve[@]}" -t 1)
else
  serve+=(-t 2)
fi
"${serve[@]}" </dev/null >"$work/llama-server.log" 2>&1 &
pids+=($!)
# shellcheck source=scripts/lib/await-server.sh
. scripts/lib/await-server.sh
await_server llama-server "${pids[-1]}" "$upstream/health" "$work/llama-server.log" 300

for kind in "${kinds[@]}"; do
  if [ "$kind" = direct ]; then
    url="$upstream"
  else
    started="$(LLMLOAD_PROXY_DIR="$work/$kind-proxy" scripts/start-proxy.sh "$kind" "$upstream")"
    url="$(sed -n 's/^PROXY_URL=//p' <<<"$started")"
    pids+=("$(sed -n 's/^PROXY_PID=//p' <<<"$started")")
  fi
  log "$kind: $requests requests of $input prompt and $output output tokens through $url"
  # Exit 3 is a run with failed responses: they are counted in the table, not hidden.
  rc=0
  "$bin" run --url "$url" --out "$work/runs" --name "$kind" --telemetry off -q \
    --input-tokens "$input" --output-tokens "$output" --concurrency 1 \
    --rounds "$requests" --warmup 1 --timeout 10m >"$work/$kind.out" 2>&1 || rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then
    log "$kind: llmload failed (exit $rc):"; tail -n 20 "$work/$kind.out" >&2; exit 1
  fi
done

python3 - "$work/runs" "${kinds[@]}" <<'PY'
import json, pathlib, statistics, sys

runs = pathlib.Path(sys.argv[1])

def median(values):
    return statistics.median(values) if values else None

def show(v, fmt="{:.1f}"):
    return "–" if v is None else fmt.format(v)

def p50(case, name):
    d = case.get(name)
    return d["median"] if d else None

header = ("path", "ok", "failed", "delivery", "TTFT−prefill ms", "decode vs server",
          "TPOT p50 / server", "ITL p50", "decode rate p50")
rows = [header]
for kind in sys.argv[2:]:
    attempt = next((runs / kind).iterdir())
    case = json.loads((attempt / "summary.json").read_text())["cases"][0]
    records = [json.loads(l) for l in (attempt / "requests.jsonl").read_text().splitlines()]
    ok = [r for r in records if r["phase"] == "measured" and r["status"] == "ok"]
    before, decode, per_token = [], [], []
    for r in ok:
        raw = (r.get("server") or {}).get("raw") or {}
        if "prompt_ms" in raw and r.get("ttft_ms") is not None:
            before.append(r["ttft_ms"] - raw["prompt_ms"])
        if raw.get("predicted_ms") and r.get("ttft_ms") is not None and r.get("e2e_ms"):
            decode.append((r["e2e_ms"] - r["ttft_ms"]) / raw["predicted_ms"] - 1)
        if raw.get("predicted_ms") and raw.get("predicted_n"):
            per_token.append(raw["predicted_ms"] / raw["predicted_n"])
    bursts = case.get("bursts")
    if not bursts:
        delivery = "streams"
    else:
        kept = ", kept" if bursts.get("kept") else ""
        held = bursts.get("held_ms")
        how = f"~{bursts['events_per_burst']:.0f} events" + (
            f", ~{held:.0f} ms held" if held is not None else "")
        delivery = f"bursts in {bursts['buffered']} of {bursts['examined']} ({how}){kept}"
    failed = [r for r in records if r["phase"] == "measured" and r["status"] != "ok"]
    rows.append((
        kind,
        str(len(ok)),
        str(len(failed)),
        delivery,
        show(median(before)),
        show(None if not decode else median(decode) * 100, "{:+.1f} %"),
        f"{show(p50(case, 'tpot_ms'), '{:.2f}')} / {show(median(per_token), '{:.2f}')}",
        show(p50(case, "itl_ms"), "{:.2f}"),
        show(p50(case, "decode_rate_tps")),
    ))
widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
for row in rows:
    print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
print("\nTTFT−prefill: the median over responses of the client's TTFT less llama-server's prompt_ms "
      "for the same response; decode vs server: the median of (complete − TTFT) ÷ predicted_ms − 1; "
      "server: predicted_ms ÷ predicted_n. A figure llmload withheld (bursts) shows as –.")
PY
