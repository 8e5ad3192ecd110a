#!/usr/bin/env bash
# The one test command: module boundaries, lint, types, then every test.
set -euo pipefail
cd "$(dirname "$0")/.."
lint-imports
ruff check .
mypy
python3 -m pytest "$@"
