#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, one instrumented build
# shared with the sanitizer test suite in build-san/) and runs each for a time.
#   fuzz/run.sh [SECONDS] [JOBS]   (default 60 s per target, 1 job; CI: 20 s)
#   env: FUZZ_PARALLEL=N targets at once (default: the number of cores)
# Prints the executions each target reached (the "stat::number_of_executed_units").
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
secs="${1:-60}"
jobs="${2:-1}"
build="${JARVIS_SAN_BUILD:-$repo/build-san}"
cmake -S "$repo" -B "$build" -DJARVIS_FUZZ=ON -DJARVIS_SANITIZE=ON -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" >/dev/null
cmake --build "$build" -j"$(( $(nproc) + 1 ))" --target fuzz_jsonrpc fuzz_trace fuzz_gzip fuzz_snapshot fuzz_graph_file fuzz_xlsx fuzz_xplane fuzz_nsys \
  fuzz_critical_path fuzz_utf8 fuzz_worker_frames fuzz_sql_text
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
run() {  # target corpus... ; the first corpus directory receives new inputs
  local target="$1" max_len="$2"
  shift 2
  echo "== $target: $secs s, $jobs job(s)"
  local parallel=()
  [ "$jobs" -gt 1 ] && parallel=(-fork="$jobs")
  mkdir -p "$build/fuzz-artifacts"  # crashing inputs land here, never in the checkout
  "$build/fuzz/$target" -max_total_time="$secs" -max_len="$max_len" -timeout=20 -rss_limit_mb=4096 \
    -artifact_prefix="$build/fuzz-artifacts/$target-" \
    -print_final_stats=1 "${parallel[@]}" "$@" >"$work/$target.log" 2>&1 || {
    tail -60 "$work/$target.log"
    return 1
  }
  grep -E "stat::number_of_executed_units|cov:|Done [0-9]+ runs" "$work/$target.log" | tail -3
}
# The targets run side by side, as many at once as there are cores (each is
# one process): CI's 2 cores fuzz the twelve targets in half the wall time.
parallel="${FUZZ_PARALLEL:-$(nproc)}"
launched=()
launch() {  # like run, in the background; its output and status land in $work
  local target="$1"
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  ( set +e; run "$@" >"$work/$target.out" 2>&1; echo $? >"$work/$target.rc" ) &
  launched+=("$target")
}
mkdir -p "$work/jsonrpc" "$work/trace" "$work/gzip" "$work/snapshot" "$work/graph_file" "$work/xlsx" "$work/xplane" "$work/nsys" \
  "$work/critical_path" "$work/utf8" "$work/worker_frames" "$work/sql_text"
cp "$here"/corpus_jsonrpc/* "$work/jsonrpc/"
cp "$here"/corpus_trace/* "$repo"/tests/malformed/*.json "$work/trace/"
cp "$here"/corpus_gzip/* "$work/gzip/"
cp "$here"/corpus_xlsx/* "$work/xlsx/"
cp "$here"/corpus_xplane/* "$repo"/tests/malformed/xplane/*.pb "$work/xplane/"
cp "$here"/corpus_critical_path/* "$here"/corpus_trace/* "$work/critical_path/"
cp "$here"/corpus_worker_frames/* "$work/worker_frames/"
launch fuzz_jsonrpc 4096 "$work/jsonrpc" "$here/corpus_jsonrpc"
launch fuzz_trace 65536 "$work/trace"
launch fuzz_gzip 65536 "$work/gzip"
# The snapshot target writes its seed (a real payload) into its corpus itself.
launch fuzz_snapshot 262144 "$work/snapshot"
# So does the graph file's (the step model's graph of a real trace).
launch fuzz_graph_file 262144 "$work/graph_file"
launch fuzz_xlsx 65536 "$work/xlsx"
launch fuzz_xplane 65536 "$work/xplane"
launch fuzz_nsys 4096 "$work/nsys"
launch fuzz_critical_path 65536 "$work/critical_path"
launch fuzz_utf8 4096 "$work/utf8"
launch fuzz_worker_frames 4096 "$work/worker_frames"
# SQLite's own LIKE (the reference) backtracks: its arguments stay short.
launch fuzz_sql_text 256 "$work/sql_text"
wait
status=0
for target in "${launched[@]}"; do
  cat "$work/$target.out"
  [ "$(cat "$work/$target.rc" 2>/dev/null)" = 0 ] || status=1
done
exit "$status"
