#!/usr/bin/env bash
# ctest wrapper: the MCP Inspector CLI lists jarvis's tools over stdio and
# calls list_traces. Skips (exit 77) only when node is missing.
set -euo pipefail
binary="$1"; shared="$2"
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node is not installed; the MCP Inspector CLI needs npm/Node" >&2
  exit 77
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Staged into the build tree with its packages; ../shared stays read-only.
run="$("$here/stage_npm_package.sh" "$shared/mcp-conformance" "$(dirname "$binary")/npm/mcp-conformance")/run.sh"
tools="$("$run" inspector --cli -q "$binary" serve --stdio --root "$shared" --method tools/list --format json)"
for name in load_trace list_traces unload_trace ops_summary; do
  echo "$tools" | grep -q "\"name\": *\"$name\"" || { echo "FAIL: tools/list lacks $name"; echo "$tools" | head -50; exit 1; }
done
call="$("$run" inspector --cli -q "$binary" serve --stdio --root "$shared" --method tools/call \
  --tool-name load_trace --tool-args-json '{"path":"conformance/h100_bert-small/trace.json.gz"}' --format json)"
echo "$call" | grep -q '"trace": *"t1"' || { echo "FAIL: load_trace via inspector"; echo "$call" | head -40; exit 1; }
echo "inspector: tools listed and load_trace called"
