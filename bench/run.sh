#!/usr/bin/env bash
# Ingestion benchmark (issue 16), all in one run: `jarvis report` and `jarvis
# info` against the floor (zlib gunzip + plain simdjson pass), cold and from
# the trace's snapshot, on the largest shared trace, a 1x re-serialised copy
# of it, a 32x tiled copy (tile_trace.py) and the H100 GPT-2 training trace
# tiled 32x (128 MB of JSON, the "147 MB-class" input); then the same tables
# with malloc on 2 MiB pages for both sides (a floor that pays few faults).
#
#   bench/run.sh [BUILD_DIR]          (default: build)
#   env: TRACE=... (input trace), COPIES=32, REPEAT=3, CMD=report|info (default both)
#
# The tiled traces are built in a temporary directory removed on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
SHARED=${JARVIS_SHARED_DIR:-$ROOT/../shared}
TRACE=${TRACE:-$SHARED/conformance/vllm_decode_graph_capture/trace.json.gz}
GPT2=$SHARED/hw_pairs/gpt2_train/h100.json.gz
COPIES=${COPIES:-32}
REPEAT=${REPEAT:-3}

cmake --build "$BUILD" --target jarvis jarvis_bench >/dev/null
JARVIS="$BUILD/jarvis"

CMDS=${CMD:-report info}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/jarvis_bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# 1x goes through the same tiler so its JSON formatting matches the 16x copy
# and the per-event times compare like with like.
python3 "$SHARED/bench/tile_trace.py" "$TRACE" "$TMP/x1.json.gz" --copies 1
python3 "$SHARED/bench/tile_trace.py" "$TRACE" "$TMP/x$COPIES.json.gz" --copies "$COPIES"
python3 "$SHARED/bench/tile_trace.py" "$GPT2" "$TMP/gpt2_x32.json.gz" --copies 32

# The report and info tables on the four inputs; jarvis_bench prints the date,
# the machine, its load average and how malloc maps memory above each table.
# Extra leading arguments are environment settings for jarvis_bench, which
# the floor and the jarvis runs inherit.
ratio_tables() {
  for cmd in $CMDS; do
    env "$@" "$BUILD/jarvis_bench" --jarvis "$JARVIS" --cmd "$cmd" --repeat "$REPEAT" \
      "$TRACE" "$TMP/x1.json.gz" "$TMP/gpt2_x32.json.gz" "$TMP/x$COPIES.json.gz"
    echo
  done
}

ratio_tables
# The same tables with malloc on transparent 2 MiB pages for the floor and for
# jarvis alike: the floor decompresses into one fresh buffer and simdjson
# indexes it, so on a VM that pays 10 us and more per fresh 4 KiB page most of
# the default floor is page faults, which jarvis (bounded chunks) mostly
# avoids. This pass shows the ratios against a floor that pays few faults, as
# on a host where faults are cheap. glibc reads the tunable at start, so it is
# set in the environment of jarvis_bench.
echo "with a fault-light floor (GLIBC_TUNABLES=glibc.malloc.hugetlb=1 for the floor and jarvis):"
echo
ratio_tables GLIBC_TUNABLES=glibc.malloc.hugetlb=1
echo "load only, by gzip inflate mode (in-process load_trace, fresh child each, best of $REPEAT):"
echo
"$BUILD/jarvis_bench" --load-modes --repeat "$REPEAT" "$TMP/x1.json.gz" "$TMP/x$COPIES.json.gz"
echo
echo "load in one long-running process (an MCP server's load_trace): JSON, then the snapshot (best of $REPEAT):"
echo
"$BUILD/jarvis_bench" --in-process --repeat "$REPEAT" \
  "$TRACE" "$TMP/x1.json.gz" "$TMP/gpt2_x32.json.gz" "$TMP/x$COPIES.json.gz"
