#!/usr/bin/env bash
# The one test command: module boundaries, lint, types, then every test.
# `scripts/test.sh fast [pytest args]`: the same checks, then only the tests that load no model,
# start no process or browser and are not slow (README "Tests"): minutes, not half an hour.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" != fast ] || set -- -m "not model and not process and not browser and not slow" "${@:2}"
# Two pytest-xdist workers, one test file per worker at a time (each worker has its own
# databases, ports and temporary folders): on the 2-core machines the suite takes about half the
# serial time, which keeps CI inside its 30-minute budget. A later -n overrides it (`-n 0`:
# serially).
set -- -n 2 --dist loadfile "$@"
lint-imports
ruff check .
mypy
python3 -m pytest "$@"
