#!/usr/bin/env bash
# SQL over a sweep of hundreds of runs (docs/sql.md "Sweeps", issue 51): RUNS
# copies of the shared H100 sweep's traces (distinct paths, so every run is
# its own trace), queried with `jarvis sql SWEEP_DIR` in a fresh process each:
#   1. the cached tables (runs) with an empty run cache: every run analysed;
#   2. the same with the run cache: no trace read;
#   3. the trace tables over every run, no snapshot yet: every trace parsed;
#   4. the same again: every trace mapped from its snapshot;
#   5. one configuration (WHERE threads = 1): only its runs read;
#   6. one run (WHERE run = 7);
#   7. the kernels_in_step view over every run;
#   8. a range on a field (WHERE threads <= 5): only its runs read;
#   9. a report sheet over 4 runs (their reports built; run 0 read for the columns).
# Prints wall seconds and peak RSS of each (best of REPEAT; 1 and 3 once,
# since they fill the caches).
#
#   bench/sweep_sql.sh [BUILD_DIR]      env: RUNS=200, REPEAT=3
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
SHARED=${JARVIS_SHARED_DIR:-$ROOT/../shared}
SRC=$SHARED/sweeps/h100_gpt2_ddp
RUNS=${RUNS:-200}
REPEAT=${REPEAT:-3}

JARVIS="$BUILD/jarvis"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/jarvis_sweep_sql_bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
export JARVIS_CACHE_DIR="$TMP/cache"  # run cache and snapshots start empty

mapfile -t SOURCES < <(cd "$SRC" && find . -name '*.json.gz' | sort)
for ((k = 0; k < RUNS; ++k)); do
  src=${SOURCES[$((k % ${#SOURCES[@]}))]}
  dst="$TMP/sweep/$((k / 4 + 1))thread/nccl_$((28 + (k % 4) * 14))channels/torch_profiler/rank0"
  mkdir -p "$dst"
  cp "$SRC/$src" "$dst/trace.json.gz"
done

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "sweep: $RUNS runs (copies of $SRC, $(du -sh "$TMP/sweep" | cut -f1)), best of $REPEAT"
echo

python3 - "$JARVIS" "$TMP/sweep" "$REPEAT" <<'PY'
import os, subprocess, sys, time

jarvis, sweep, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])

def measure(label, sql, times):
    best = None
    for _ in range(times):
        t0 = time.monotonic()
        p = subprocess.Popen([jarvis, "sql", sweep, sql, "--format", "csv"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        out = p.stdout.read().decode()
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        if status != 0:
            sys.exit(f"failed: {sql}")
        sample = (wall, ru.ru_maxrss / 1024, out.strip().splitlines()[-1])
        best = sample if best is None or sample[0] < best[0] else best
    print(f"{label:<58} {best[0]:7.2f} s {best[1]:7.0f} MB   last row: {best[2][:40]}")

measure("1. runs, empty run cache (every run analysed)", "SELECT count(*) FROM runs", 1)
measure("2. runs, run cache", "SELECT count(*) FROM runs", repeat)
q = "SELECT count(*), sum(dur) FROM kernels"
measure("3. kernels over every run, no snapshot (parse)", q, 1)
measure("4. kernels over every run, snapshots", q, repeat)
measure("5. kernels WHERE threads = 1 (4 runs)", q + " WHERE threads = 1", repeat)
measure("6. kernels WHERE run = 7 (1 run)", q + " WHERE run = 7", repeat)
measure("7. kernels_in_step per configuration, every run",
        "SELECT threads, channel, count(*) FROM kernels_in_step GROUP BY 1, 2", repeat)
measure("8. kernels WHERE threads <= 5 (20 runs)", q + " WHERE threads <= 5", repeat)
measure("9. kernel_summary WHERE run BETWEEN 1 AND 4 (5 runs read)",
        "SELECT count(*) FROM kernel_summary WHERE run BETWEEN 1 AND 4", repeat)
PY
