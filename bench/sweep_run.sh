#!/usr/bin/env bash
# Sweep benchmark: a 64-run sweep made of copies of the shared H100 sweep's
# traces (same layout, distinct paths, so every run is analysed and cached on
# its own), timed cold (empty cache) and warm (every run from the cache),
# against `jarvis report` of one run. Prints wall and CPU seconds, time per
# run and peak RSS of each command (one fresh child process each, best of
# REPEAT), and checks the targets of issue 11:
#   cold <= (runs / cores) x single-run report time x 1.2;  warm <= 5% of cold.
#
#   bench/sweep_run.sh [BUILD_DIR]      env: RUNS=64, REPEAT=3, JOBS=$(nproc)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
SHARED=${JARVIS_SHARED_DIR:-$ROOT/../shared}
SRC=$SHARED/sweeps/h100_gpt2_ddp
RUNS=${RUNS:-64}
REPEAT=${REPEAT:-3}
JOBS=${JOBS:-$(nproc)}

cmake --build "$BUILD" --target jarvis >/dev/null
JARVIS="$BUILD/jarvis"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/jarvis_sweep_bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# RUNS runs: thread settings 1..N x the source's channel settings, each a copy
# of one of the six source traces in turn.
mapfile -t SOURCES < <(cd "$SRC" && find . -name '*.json.gz' | sort)
for ((k = 0; k < RUNS; ++k)); do
  src=${SOURCES[$((k % ${#SOURCES[@]}))]}
  dst="$TMP/sweep/$((k / 4 + 1))thread/nccl_$((28 + (k % 4) * 14))channels/torch_profiler/rank0"
  mkdir -p "$dst"
  cp "$SRC/$src" "$dst/trace.json.gz"
done

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"\
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "sweep: $RUNS runs (copies of $SRC), --jobs $JOBS, best of $REPEAT"
echo

python3 - "$JARVIS" "$TMP" "$RUNS" "$REPEAT" "$JOBS" "$(nproc)" "$SRC/${SOURCES[0]}" <<'PY'
import os, shutil, subprocess, sys, time

jarvis, tmp, runs, repeat, jobs, cores, one = sys.argv[1:8]
runs, repeat, jobs, cores = int(runs), int(repeat), int(jobs), int(cores)

def measure(cmd, before=None):
    """Best-of-`repeat` wall time, with the CPU time and peak RSS of that run."""
    best = None
    for _ in range(repeat):
        if before:
            before()
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        if status != 0:
            sys.exit(f"failed: {' '.join(cmd)}")
        sample = (wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024)
        best = sample if best is None or wall < best[0] else best
    return best

cache = os.path.join(tmp, "cache")
sweep = [jarvis, "sweep", os.path.join(tmp, "sweep"), "--out", os.path.join(tmp, "out"),
         "--cache", cache, "--jobs", str(jobs), "--quiet"]
single = measure([jarvis, "report", one, "--out", os.path.join(tmp, "one")])
cold = measure(sweep, before=lambda: shutil.rmtree(cache, ignore_errors=True))
warm = measure(sweep)

print("| command | wall s | CPU s | wall s per run | peak RSS MB |")
print("|---|---:|---:|---:|---:|")
print(f"| jarvis report (one run) | {single[0]:.3f} | {single[1]:.3f} | {single[0]:.3f} | {single[2]:.1f} |")
print(f"| jarvis sweep, cold ({runs} runs) | {cold[0]:.3f} | {cold[1]:.3f} | {cold[0] / runs:.4f} | {cold[2]:.1f} |")
print(f"| jarvis sweep, warm ({runs} runs) | {warm[0]:.3f} | {warm[1]:.3f} | {warm[0] / runs:.4f} | {warm[2]:.1f} |")
cold_target = runs / cores * single[0] * 1.2
print()
print(f"cold target: {cold[0]:.3f} s <= ({runs} / {cores}) x {single[0]:.3f} x 1.2 = {cold_target:.3f} s: "
      f"{'met' if cold[0] <= cold_target else 'MISSED'}")
print(f"warm target: {warm[0]:.3f} s <= 5% of cold = {0.05 * cold[0]:.3f} s: "
      f"{'met' if warm[0] <= 0.05 * cold[0] else 'MISSED'}")
PY
