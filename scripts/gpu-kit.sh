#!/usr/bin/env bash
# GPU kit: llmload on a real GPU in one go, sized to under 10 minutes of device time.
#
#   scripts/gpu-kit.sh [OUT_DIR]
#
# What it needs: a release llmload (LLMLOAD_BIN, else target/release/llmload, else it builds one
# with cargo) and a Python with PyTorch and transformers (PYTHON, else python3 if it has them,
# else the vLLM setup's). Nothing is downloaded: the served model is built on the spot.
#
# Steps, each printed as it goes:
#   1. the tiny server (scripts/gpu/tiny_server.py: a random-weight causal model, bytes as
#      tokens, OpenAI completions with SSE, requests in flight decoded together) on the GPU, or
#      on the CPU where there is none;
#   2. llmload against it: concurrency 1, 8 and 32, 64-token prompts, 64 tokens out; every
#      response must be ok and verified;
#   --- the steps below need an NVIDIA GPU; without one the kit stops here and says so ---
#   3. the same run with `--telemetry nvml`: the energy of each case (joules, tokens per joule)
#      and every telemetry field's presence in its readings;
#   4. `nvidia-smi`, once;
#   5. the thermal guard: a continuous load with `--stop-temp` one degree below the GPU's
#      temperature, which must stop the run (outcome `stopped`, the rule and the reading).
#
# Exits 0 when every step ran and held, 1 when one failed, 2 when there is no GPU (steps 1 and 2
# held). Prints figures; what each step saw is also left in OUT_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${1:-$(mktemp -d)}"
mkdir -p "$out"
say() { printf '== %s\n' "$*"; }

bin="${LLMLOAD_BIN:-}"
if [ -z "$bin" ]; then
  if [ -x target/release/llmload ]; then
    bin=target/release/llmload
  else
    say "building llmload (release)"
    cargo build --release --quiet -p llmload --bin llmload
    bin=target/release/llmload
  fi
fi
python="${PYTHON:-}"
if [ -z "$python" ]; then
  for candidate in python3 "$HOME/.cache/llmload/vllm-venv/bin/python"; do
    if "$candidate" -c 'import torch, transformers' >/dev/null 2>&1; then
      python="$candidate"
      break
    fi
  done
fi
if [ -z "$python" ]; then
  echo "gpu-kit: no Python with torch and transformers (set PYTHON)" >&2
  exit 1
fi
gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=index --format=csv,noheader >/dev/null 2>&1 &&
  "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  gpu=1
fi
echo "llmload $("$bin" --version | awk '{print $2}'), $("$python" -c 'import torch; print("torch", torch.__version__)'), GPU: $([ "$gpu" = 1 ] && nvidia-smi --query-gpu=name --format=csv,noheader | head -1 || echo none)"

server_pid=""
cleanup() { [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true; }
trap cleanup EXIT

say "1. the tiny server"
# A larger model on a GPU (it must work), a small one on a CPU (it must answer in time).
if [ "$gpu" = 1 ]; then size=(--layers 8 --hidden 1024); else size=(--layers 2 --hidden 128); fi
"$python" scripts/gpu/tiny_server.py --port 0 "${size[@]}" >"$out/server.log" 2>&1 &
server_pid=$!
url=""
for _ in $(seq 600); do
  url="$(sed -n 's|^listening on ||p' "$out/server.log")"
  [ -n "$url" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "gpu-kit: the tiny server did not start:" >&2
  cat "$out/server.log" >&2
  exit 1
fi
echo "$(head -1 "$out/server.log"), $url"

# run NAME TELEMETRY [FLAGS…]: llmload against the tiny server, the attempt folder on stdout.
run() {
  local name="$1" telemetry="$2"
  shift 2
  local code=0
  timeout 300 "$bin" run --url "$url" --api completions --input-tokens 64 --output-tokens 64 \
    --telemetry "$telemetry" --out "$out" --name "$name" -q "$@" >"$out/$name.stdout" \
    2>"$out/$name.stderr" || code=$?
  echo "$code $(ls -d "$out/$name"/*/ 2>/dev/null | tail -1)"
}

# check ATTEMPT: every measured response ok and verified; prints a line per case.
check() {
  "$python" - "$1" <<'PY'
import json, sys
dir = sys.argv[1]
records = [json.loads(l) for l in open(dir + "requests.jsonl") if l.strip()]
measured = [r for r in records if r["phase"] == "measured"]
bad = [r for r in measured if r["status"] != "ok" or not r["verified"]]
summary = json.load(open(dir + "summary.json"))
for case in summary["cases"]:
    ttft = (case.get("ttft_ms") or {}).get("median")
    e = case.get("energy") or {}
    energy = (f", {e['total_j']:.1f} J, {e['output_tokens_per_joule']:.2f} tokens/J"
              if e.get("total_j") is not None else
              (f", energy: {e['unavailable']}" if e.get("unavailable") else ""))
    print(f"  {case['id']}: {case['counts']['ok']} ok, TTFT p50 {ttft:.1f} ms{energy}")
print(f"  {len(measured)} measured responses, {len(bad)} not ok or unverified")
sys.exit(1 if bad or not measured else 0)
PY
}

say "2. llmload against it (concurrency 1, 8, 32)"
read -r code attempt < <(run plain off --concurrency 1,8,32 --rounds 2)
if [ "$code" != 0 ] || ! check "$attempt"; then
  echo "gpu-kit: llmload against the tiny server failed (exit $code):" >&2
  tail -5 "$out/plain.stderr" >&2
  exit 1
fi

if [ "$gpu" = 0 ]; then
  say "no GPU here: steps 3 to 5 (NVML telemetry and energy per case, nvidia-smi, the thermal guard's stop) need an NVIDIA GPU; stopping before them"
  exit 2
fi

status=0
say "3. with --telemetry nvml: energy per case and the readings' fields"
read -r code attempt < <(run nvml nvml --concurrency 1,8,32 --rounds 2 --telemetry-interval 200ms)
if [ "$code" != 0 ] || ! check "$attempt"; then
  echo "gpu-kit: the NVML run failed (exit $code)" >&2
  status=1
else
  "$python" - "${attempt}telemetry.jsonl" <<'PY'
import json, sys
readings = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
fields = sorted({k for r in readings for k in r})
print(f"  {len(readings)} readings; fields: " + ", ".join(
    f"{k} {sum(k in r for r in readings)}" for k in fields))
PY
fi

say "4. nvidia-smi"
nvidia-smi --query-gpu=index,name,driver_version,temperature.gpu,power.draw,power.limit,clocks.sm,utilization.gpu --format=csv

say "5. the thermal guard: --stop-temp one degree below the GPU's temperature"
temp="$(nvidia-smi --query-gpu=temperature.gpu --format=csv,noheader,nounits | sort -n | tail -1)"
stop=$((temp - 1))
read -r code attempt < <(run guard nvml --arrival closed-continuous --concurrency 32 --duration 60s --stop-temp "$stop")
"$python" - "${attempt}summary.json" "$code" "$stop" <<'PY' || status=1
import json, sys
outcome = json.load(open(sys.argv[1]))["outcome"]
print(f"  exit {sys.argv[2]}, outcome {outcome['status']}: {outcome.get('reason')}")
sys.exit(0 if outcome["status"] == "stopped" else 1)
PY
exit "$status"
