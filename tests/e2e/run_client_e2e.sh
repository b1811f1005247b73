#!/usr/bin/env bash
# ctest wrapper for client_e2e.mjs. Skips (exit 77) only when node is missing.
# Installs ../shared/mcp-client's pinned packages into the build tree on first
# use (npm ci there; ../shared stays read-only).
set -euo pipefail
binary="$1"; shared="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node is not installed; the MCP SDK end-to-end test needs Node >= 20" >&2
  exit 77
fi
client_dir="$("$here/stage_npm_package.sh" "$shared/mcp-client" \
  "$(dirname "$binary")/npm/mcp-client" --omit=dev)"
exec node "$here/client_e2e.mjs" "$binary" "$shared" "$client_dir"
