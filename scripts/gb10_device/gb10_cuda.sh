#!/bin/bash
# The GB10 runners' CUDA path on tiny locally built models, on the lent GPU machine.
# Run from the repository root there, with .whl and .device carried:
#   bash .device/gb10_cuda.sh
# Writes $OUT/log.txt (everything printed), $OUT/junit.xml, $OUT/timing.json, $OUT/smi.csv.
set -o pipefail
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
OUT=${OUT:-/tmp/gb10-out}
mkdir -p "$OUT"

main() {
  echo "== $(date -u +%T) environment"
  uname -m; nproc
  nvidia-smi
  python3 -c "import sys, torch; print(sys.version); print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available(), torch.cuda.get_device_name(0))"

  echo "== $(date -u +%T) install the carried wheels into /tmp/site"
  ls .whl | wc -l
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || { echo "WHEEL INSTALL FAILED"; return 1; }
  export PYTHONPATH=/tmp/site:$PWD

  echo "== $(date -u +%T) versions and imports"
  python3 - <<'EOF'
import importlib.metadata as m
for n in ["torch", "torchaudio", "numpy", "transformers", "tokenizers", "huggingface_hub",
          "accelerate", "lightning", "nemo_toolkit", "qwen-tts", "faster-qwen3-tts", "lhotse",
          "librosa", "omegaconf", "hydra-core", "numba", "pandas"]:
    try:
        print(f"{n:20} {m.version(n)}")
    except m.PackageNotFoundError:
        print(f"{n:20} MISSING")
import transformers, nemo.collections.asr, qwen_tts, faster_qwen3_tts
print("transformers from", transformers.__file__)
import tests.inference.test_gb10_tiny
print("imports ok")
EOF

  nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -lms 500 > "$OUT/smi.csv" &
  local smi=$!

  # --noconftest: tests/conftest.py imports the whole web app (starlette, SQLAlchemy, MCP, babel,
  # ...), which these tests do not use; its one fixture here, anyio_backend, is anyio's default.
  echo "== $(date -u +%T) tiny-model tests on cuda"
  VOCERO_TEST_GB10_DEVICE=cuda timeout 300 python3 -m pytest -m gb10 tests/inference/test_gb10_tiny.py \
    --noconftest -p no:cacheprovider -v -rA --durations=0 --junitxml="$OUT/junit.xml"
  echo "pytest exit $?"

  echo "== $(date -u +%T) timings: cpu vs cuda"
  timeout 240 python3 .device/gb10_timing.py "$OUT/timing.json" 8
  echo "timing exit $?"

  kill $smi 2>/dev/null
  echo "== $(date -u +%T) peak GPU memory used (nvidia-smi, MiB, whole card)"
  awk -F', ' 'NR>1 {gsub(/ MiB/,"",$2); if ($2+0>m) m=$2+0} END {print m}' "$OUT/smi.csv"
  nvidia-smi
  echo "== $(date -u +%T) done"
}

main 2>&1 | tee "$OUT/log.txt"
