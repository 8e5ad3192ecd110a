#!/bin/bash
# Recreate /work/main/.whl (cp312 manylinux x86_64 + pure wheels, 59 files, ~38 MiB) for the GPU run.
# antlr4-python3-runtime 4.9.3 and sox 1.5.0 are sdist-only on PyPI: built here as pure wheels.
set -e
cd "$(dirname "$0")/../.."
grep -qx '/.whl/' .git/info/exclude || echo /.whl/ >> .git/info/exclude
grep -qx '/.device/' .git/info/exclude || echo /.device/ >> .git/info/exclude
mkdir -p .whl .device
cp scripts/gb10_device/gb10_cuda.sh scripts/gb10_device/gb10_timing.py .device/
pip wheel -q --no-deps -w .whl antlr4-python3-runtime==4.9.3 sox==1.5.0
specs=$(grep -vE '^(antlr4|sox-)' scripts/gb10_device/wheels.txt | awk -F- '{print $1"=="$2}')
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
  -d .whl $specs
ls .whl | wc -l; du -sh .whl
