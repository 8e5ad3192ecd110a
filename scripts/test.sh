#!/usr/bin/env bash
# The one test command: module boundaries, then every test.
set -euo pipefail
cd "$(dirname "$0")/.."
lint-imports
python3 -m pytest "$@"
