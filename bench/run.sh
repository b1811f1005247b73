#!/usr/bin/env bash
# Ingestion benchmark: `jarvis report` against the floor (zlib gunzip + plain
# simdjson pass) on the largest conformance trace, on a 1x re-serialised copy
# and on a 16x tiled copy (tile_trace.py), all in one run.
#
#   bench/run.sh [BUILD_DIR]          (default: build)
#   env: TRACE=... (input trace), COPIES=16, REPEAT=3, CMD=report|info
#
# The tiled traces are built in a temporary directory removed on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
SHARED=${JARVIS_SHARED_DIR:-$ROOT/../shared}
TRACE=${TRACE:-$SHARED/conformance/mi300_qwen1.5-0.5b/trace.json.gz}
COPIES=${COPIES:-16}
REPEAT=${REPEAT:-3}

cmake --build "$BUILD" --target jarvis jarvis_bench >/dev/null
JARVIS="$BUILD/jarvis"

# Measure `report` once it exists; `info` (load only) before that.
if [[ -z "${CMD:-}" ]]; then
  if "$JARVIS" --help 2>&1 | grep -q '^  report '; then CMD=report; else CMD=info; fi
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/jarvis_bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# 1x goes through the same tiler so its JSON formatting matches the 16x copy
# and the per-event times compare like with like.
python3 "$SHARED/bench/tile_trace.py" "$TRACE" "$TMP/x1.json.gz" --copies 1
python3 "$SHARED/bench/tile_trace.py" "$TRACE" "$TMP/x$COPIES.json.gz" --copies "$COPIES"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"\
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "command: jarvis $CMD TRACE$([[ $CMD == report ]] && echo ' --out TMP'), best of $REPEAT"
echo
"$BUILD/jarvis_bench" --jarvis "$JARVIS" --cmd "$CMD" --repeat "$REPEAT" \
  "$TRACE" "$TMP/x1.json.gz" "$TMP/x$COPIES.json.gz"
echo
echo "load only, by gzip inflate mode (in-process load_trace, fresh child each, best of $REPEAT):"
echo
"$BUILD/jarvis_bench" --load-modes --repeat "$REPEAT" "$TMP/x1.json.gz" "$TMP/x$COPIES.json.gz"
