#!/usr/bin/env bash
# GPU check: which telemetry fields NVML and nvidia-smi report on this machine's driver.
#
#   scripts/gpu-check.sh [OUT_DIR]
#
# For a machine with an NVIDIA GPU and driver. Builds llmload, then runs it briefly against the
# built-in simulator (no --url), once with `--telemetry nvml` and once with
# `--telemetry nvidia-smi` (5 s of one request kept in flight, a reading a second), and prints,
# per source, how many readings carried each field of telemetry.jsonl (absent fields are left out
# of a reading, so a field the driver does not report counts 0). Takes about a minute once built.
# Exits 2 where there is no nvidia-smi, 1 when a source gave no reading.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpu-check: nvidia-smi not found: this check needs a machine with an NVIDIA GPU and driver" >&2
  exit 2
fi
if ! nvidia-smi --query-gpu=index --format=csv,noheader >/dev/null 2>&1; then
  echo "gpu-check: nvidia-smi is installed but answers no query (no GPU visible, or the driver is not loaded)" >&2
  exit 2
fi

out="${1:-$(mktemp -d)}"
mkdir -p "$out"
echo "== machine"
nvidia-smi --query-gpu=index,name,driver_version,temperature.gpu,power.limit --format=csv
if nvidia-smi --query-gpu=temperature.gpu.tlimit --format=csv,noheader >/dev/null 2>&1; then
  echo "nvidia-smi answers temperature.gpu.tlimit (T.Limit margin)"
else
  echo "nvidia-smi refuses temperature.gpu.tlimit: no T.Limit margin from this driver"
fi

echo "== build"
cargo build --quiet -p llmload --bin llmload
bin=target/debug/llmload

fields="temperature_c margin_c power_w power_limit_w sm_clock_mhz mem_clock_mhz utilization_pct
memory_used_mib sw_thermal_slowdown hw_thermal_slowdown sw_power_cap"
status=0
for source in nvml nvidia-smi; do
  echo "== --telemetry $source"
  code=0
  timeout 120 "$bin" run --telemetry "$source" --arrival closed-continuous --duration 5s \
    --input-tokens 128 --output-tokens 16 --concurrency 1 --out "$out" --name "$source" -q \
    >"$out/$source.stdout" 2>"$out/$source.stderr" || code=$?
  if [ "$code" -ne 0 ]; then
    echo "llmload exited with $code:"
    cat "$out/$source.stderr"
    status=1
    continue
  fi
  attempt="$(ls -d "$out/$source"/*/ | tail -1)"
  file="${attempt}telemetry.jsonl"
  if [ ! -s "$file" ]; then
    echo "no readings in $file"
    status=1
    continue
  fi
  readings="$(wc -l <"$file")"
  gpus="$(grep -o '"gpu":[0-9]*' "$file" | sort -u | wc -l)"
  echo "$readings readings from $gpus GPU(s) in $file"
  for field in $fields; do
    printf '  %-22s %s of %s\n' "$field" "$(grep -c "\"$field\":" "$file" || true)" "$readings"
  done
  echo "  first reading: $(head -1 "$file")"
done
exit "$status"
