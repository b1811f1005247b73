#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a short time.
#   fuzz/run.sh [SECONDS]      (default 60; CI uses a short run)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
secs="${1:-60}"
build="$repo/build-fuzz"
cmake -S "$repo" -B "$build" -DJARVIS_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzz_jsonrpc
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$here"/corpus_jsonrpc/* "$work"/
"$build/fuzz/fuzz_jsonrpc" -max_total_time="$secs" -max_len=4096 -timeout=10 "$work" "$here/corpus_jsonrpc"
