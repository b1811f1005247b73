#!/usr/bin/env bash
# Builds jarvis and its unit suite with ASan + UBSan (clang, build-san/) and
# runs the suite. Any sanitizer report fails the run.
#   tests/run_sanitized.sh [doctest args...]   e.g. -tc='crafted*'
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${JARVIS_SAN_BUILD:-$repo/build-san}"
cmake -S "$repo" -B "$build" -DJARVIS_FUZZ=ON -DJARVIS_SANITIZE=ON -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" -DJARVIS_WERROR=ON -DBUILD_TESTING=ON >/dev/null
cmake --build "$build" -j"$(( $(nproc) + 1 ))" --target jarvis jarvis_tests
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$repo/tests/lsan.supp:print_suppressions=0"
cd "$build"
# Left to the unsanitized ctest run: eleven tests that repeat code paths the
# rest of the suite covers over every real trace of ../shared (8 of the
# suite's 29 CPU minutes under ASan + UBSan; the inflate modes are fuzzed by
# fuzz_gzip; each insights rule, the backlog, the what-ifs and the plan run
# sanitized in their single-trace tests),
# and five that measure a server process's (or its workers') peak memory or drive it through a
# long scripted session (ASan's quarantine and shadow memory make the peaks
# meaningless; 2.5 CPU minutes): their code paths run sanitized in the
# in-process tests of the same issues.
# Set JARVIS_SAN_ALL=1 to run them too.
skip=()
if [ -z "${JARVIS_SAN_ALL:-}" ]; then
  skip=(-tce="every single-trace tool's default result*,loader: every gzip inflate mode*,A/B savings: no saving exceeds*,memory: shared traces against their raw*,critical path async: invariants on every trace*,GPU backlog: every ab_pairs*,analyse_trace? and make_context given the step model*,one figure per change*,one change? one finding: every Kineto trace*,the plan's changes? each replayed*,profiler overhead: the un-profiled step of every ab_pairs arm*,issue 49 point 3: large messages queued behind*,agent_session: scripted performance-analysis workflow*,issue 63 point 1: over MCP under --max-memory*,issue 63 point 2: over MCP under --max-memory*,issue 74 point 8: --max-memory covers the server and its workers*")
fi
# Two shards at once: one per core of the CI machine (tests/run_shard.sh).
# Each is bounded (JARVIS_SAN_SHARD_TIMEOUT seconds, 25 minutes unless set;
# a shard takes 6-12): a test that hangs is ended with SIGABRT, on which
# doctest names the test case it was in, instead of CI running into its
# own limit with nothing said. --duration lists every case's time.
limit="${JARVIS_SAN_SHARD_TIMEOUT:-1500}"
log="$(mktemp -d)"
trap 'rm -rf "$log"' EXIT
shard() {  # K
  timeout --signal=ABRT --kill-after=60 "$limit" \
    bash "$repo/tests/run_shard.sh" ./jarvis_tests "$1" 2 --duration=true "${skip[@]}" "${args[@]}" \
    >"$log/$1" 2>&1 || {
    local rc=$?
    # timeout's own codes (124: ended at the limit, 137: killed 60 s later);
    # a sanitizer's abort (134) is a failure of the suite, told by its log.
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
      echo "run_sanitized.sh: shard $1 of 2 did not end within $limit s (exit $rc)" >>"$log/$1"
    fi
    return "$rc"
  }
}
args=("$@")
SECONDS=0
shard 1 &
first=$!
status=0
shard 2 || status=$?
wait "$first" || status=$?
# --duration makes doctest head every case's time with the case's name (a
# block of four lines per case): a failed shard's log is cut down to the
# blocks that tell of a failure, a crash or a sanitizer's report, and the
# lines outside any block (CI keeps only the tail of what a run prints; stop
# 95's failure was lost behind 400 such headers).
failures_of() {  # LOG
  awk '
    function flush() { if (block != "" && keep) printf "%s", block; block = ""; keep = 0 }
    /^[0-9.]+ s: / { next }
    /^====================+$/ { flush(); block = $0 "\n"; inblock = 1; next }
    /^\[doctest\]/ { flush(); inblock = 0; print; next }
    inblock { block = block $0 "\n"
              if ($0 !~ /^TEST (CASE|SUITE):/ && $0 ~ /ERROR|FATAL|CRASHED|runtime error|Sanitizer|SUMMARY|did not end/) keep = 1
              next }
    { print }
    END { flush() }' "$1"
}
# The slowest cases first, then each shard's summary (the failures when a
# shard failed).
for k in 1 2; do
  if grep -q "^\[doctest\] Status: SUCCESS" "$log/$k"; then
    # sed reads to the end (head would exit after five lines, and sort, cut
    # off, would end the script with SIGPIPE under pipefail: exit 141).
    grep -E "^[0-9.]+ s: " "$log/$k" | sort -rn | sed -n "1,5s/^/shard $k, slowest: /p"
    grep "^\[doctest\]" "$log/$k"
  else
    failures_of "$log/$k"
  fi
done
echo "run_sanitized.sh: the suite took $SECONDS s"
exit "$status"
