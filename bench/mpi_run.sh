#!/usr/bin/env bash
# Scale-out benchmark (issue 21, docs/scale-out.md): a 64-run sweep made of
# copies of the shared H100 sweep's traces, analysed cold (no cache) by one
# process and by `mpirun -np 2` and `-np 4`, against the single-run time
# measured in the same run (a one-run sweep). Prints wall time, the ratio to
# (runs / processes) x single-run time, and each rank's peak RSS (--stats).
# One process runs with --jobs 1 so that every column is "one trace at a time
# per process", the MPI unit of work.
#
#   bench/mpi_run.sh [BUILD_DIR]      env: RUNS=64, REPEAT=3
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
SHARED=${JARVIS_SHARED_DIR:-$ROOT/../shared}
SRC=$SHARED/sweeps/h100_gpt2_ddp
RUNS=${RUNS:-64}
REPEAT=${REPEAT:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

JARVIS="$BUILD/jarvis"
"$JARVIS" --version | grep -q "MPI on" || { echo "needs a JARVIS_MPI build"; exit 1; }
command -v mpirun >/dev/null || { echo "needs mpirun (openmpi-bin)"; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/jarvis_mpi_bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# RUNS runs (copies, so every run is its own file) and a one-run sweep.
mapfile -t SOURCES < <(cd "$SRC" && find . -name '*.json.gz' | sort)
for ((k = 0; k < RUNS; ++k)); do
  dst="$TMP/sweep/$((k / 4 + 1))thread/nccl_$((28 + (k % 4) * 14))channels/torch_profiler/rank0"
  mkdir -p "$dst"
  cp "$SRC/${SOURCES[$((k % ${#SOURCES[@]}))]}" "$dst/trace.json.gz"
done
mkdir -p "$TMP/one/1thread/nccl_28channels/torch_profiler/rank0"
cp "$SRC/${SOURCES[0]}" "$TMP/one/1thread/nccl_28channels/torch_profiler/rank0/trace.json.gz"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"\
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); $("$JARVIS" --version); $(mpirun --version | head -1)"
echo "sweep: $RUNS runs (copies of $SRC), cold (--cache none), best of $REPEAT"
echo

python3 - "$JARVIS" "$TMP" "$RUNS" "$REPEAT" <<'PY'
import re, subprocess, sys, time

jarvis, tmp, runs, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

def measure(prefix, sweep):
    """Best-of-`repeat` wall time and that run's per-rank peak RSS (MB)."""
    best = None
    for _ in range(repeat):
        cmd = prefix + [jarvis, "sweep", f"{tmp}/{sweep}", "--out", f"{tmp}/out_{sweep}",
                        "--cache", "none", "--jobs", "1", "--quiet", "--stats"]
        t0 = time.monotonic()
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - t0
        if p.returncode != 0:
            sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
        rss = [float(m) for m in re.findall(r"stats: rank \d+: peak RSS ([0-9.]+) MB", p.stderr)]
        if best is None or wall < best[0]:
            best = (wall, rss)
    return best

single = measure([], "one")[0]
rows = [("1 process", 1, measure([], "sweep"))]
for np in (2, 4):
    rows.append((f"mpirun -np {np}", np, measure(["mpirun", "-np", str(np)], "sweep")))
print(f"single run (one-run sweep, one process): {single:.3f} s")
print()
print("| command | processes | wall s | s per run | ideal s = runs/processes x single | ratio | peak RSS per rank MB |")
print("|---|---:|---:|---:|---:|---:|---|")
for name, np, (wall, rss) in rows:
    ideal = runs / np * single
    print(f"| {name} | {np} | {wall:.3f} | {wall / runs:.4f} | {ideal:.3f} | {wall / ideal:.2f} | "
          f"{', '.join(f'{r:.0f}' for r in rss)} |")
PY
