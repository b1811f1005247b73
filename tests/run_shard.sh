#!/usr/bin/env bash
# Runs shard K of N of a doctest binary's test cases (in doctest's file
# order), so that CI runs the unit suite on every core:
#   tests/run_shard.sh BINARY K N [doctest args...]
set -euo pipefail
binary="$1" k="$2" n="$3"
shift 3
total="$("$binary" --count "$@" | sed -n 's/.*passing the current filters: \([0-9]*\).*/\1/p')"
[ -n "$total" ] || { echo "run_shard.sh: cannot count the test cases of $binary" >&2; exit 1; }
first=$(( (k - 1) * total / n + 1 ))
last=$(( k * total / n ))
[ "$last" -ge "$first" ] || exit 0
exec "$binary" --first="$first" --last="$last" "$@"
