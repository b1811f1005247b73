#!/usr/bin/env bash
# ctest wrapper: the official MCP conformance suite (HTTP only) against
# `jarvis serve --http --conformance-fixtures`. Every scenario of the active
# suite must pass, or be listed in mcp-conformance-baseline.yml with a reason.
# Skips (exit 77) only when node is missing. ../shared/mcp-conformance is
# staged into the build tree and its pinned packages (Node 22 included) are
# installed there on first use; ../shared stays read-only.
set -euo pipefail
binary="$1"; shared="$2"; source_dir="$3"
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node is not installed; the MCP conformance suite needs npm/Node" >&2
  exit 77
fi
log="$(mktemp)"
"$binary" serve --http 127.0.0.1:0 --conformance-fixtures --root "$shared" 2>"$log" &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -f "$log"' EXIT
url=""
for _ in $(seq 100); do
  url="$(grep -o 'http://[^ ]*/mcp' "$log" || true)"
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "server did not start:"; cat "$log"; exit 1; }
args=(conformance server --url "$url" "${@:4}")
baseline="$source_dir/mcp-conformance-baseline.yml"
[ -f "$baseline" ] && args+=(--expected-failures "$baseline")
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
suite="$("$here/stage_npm_package.sh" "$shared/mcp-conformance" "$(dirname "$binary")/npm/mcp-conformance")"
out="$("$suite/run.sh" "${args[@]}" 2>&1)" && rc=0 || rc=$?
echo "$out" | sed -n '/=== SUMMARY ===/,$p'
[ "$rc" = 0 ] || echo "$out" | tail -80
exit "$rc"
