#!/usr/bin/env bash
# ctest wrapper for client_e2e.mjs. Skips (exit 77) only when node is missing.
# Installs ../shared/mcp-client's pinned packages on first use (npm ci).
set -euo pipefail
binary="$1"; shared="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node is not installed; the MCP SDK end-to-end test needs Node >= 20" >&2
  exit 77
fi
if [ ! -d "$shared/mcp-client/node_modules/@modelcontextprotocol" ]; then
  (cd "$shared/mcp-client" && npm ci --omit=dev --no-audit --no-fund --loglevel=error >&2)
fi
exec node "$here/client_e2e.mjs" "$binary" "$shared"
