#!/usr/bin/env bash
# Runs a ctest entry that reads ../shared (real traces, TraceLens references,
# the MCP client packages). A fresh clone has no ../shared, and its test run
# stays green on what the repository holds:
#   needs_shared.sh SHARED_DIR [--else DIR] [--needs TEXT] COMMAND [ARGS...]
# --else DIR: without SHARED_DIR the entry runs on DIR instead (the
#   repository's copy of part of ../shared, tests/data/shared): every argument
#   equal to SHARED_DIR becomes DIR and JARVIS_SHARED_DIR is set to DIR; what
#   that leaves out is printed.
# --needs TEXT: what the entry reads from ../shared, printed when it is skipped
#   (exit 77, ctest's SKIP_RETURN_CODE) for want of it.
# JARVIS_SHARED_DIR in the environment names the shared data in SHARED_DIR's
# place (every argument equal to SHARED_DIR becomes it), as it does for the
# unit suite (tests/support/golden.cpp): `JARVIS_SHARED_DIR=/nonexistent
# ctest` runs every entry as a fresh clone would. The command always sees
# JARVIS_SHARED_DIR set to the directory it reads.
set -euo pipefail
configured="$1"
shared="${JARVIS_SHARED_DIR:-$1}"
shift
fallback="" needs=""
while [ $# -gt 0 ]; do
  case "$1" in
    --else) fallback="$2"; shift 2 ;;
    --needs) needs="$2"; shift 2 ;;
    *) break ;;
  esac
done
# Every argument naming the configured directory names `$1` instead.
with_shared() {  # with_shared DIR COMMAND [ARGS...]
  local dir="$1"
  shift
  args=()
  for a in "$@"; do
    if [ "$a" = "$configured" ]; then args+=("$dir"); else args+=("$a"); fi
  done
}
if [ -d "$shared" ]; then
  with_shared "$shared" "$@"
  export JARVIS_SHARED_DIR="$shared"
  exec "${args[@]}"
fi
if [ -n "$fallback" ] && [ -d "$fallback" ]; then
  held="$(cd "$fallback" && ls -d -- */ 2>/dev/null | tr -d / | tr '\n' ' ')"
  echo "note: $shared not found (a fresh clone has no ../shared): running on the repository's" \
       "copy of part of it, $fallback (${held% }); the traces of ../shared's other folders are" \
       "not tested here" >&2
  with_shared "$fallback" "$@"
  export JARVIS_SHARED_DIR="$fallback"
  exec "${args[@]}"
fi
echo "skipped: $shared not found (a fresh clone has no ../shared)${needs:+; this test needs $needs}," \
     "which the repository does not hold; place the shared data beside the repository to run it" >&2
exit 77
