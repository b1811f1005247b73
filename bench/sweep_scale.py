#!/usr/bin/env python3
"""Sweep at scale (issue 62 target 3): N distinct tiny runs in the default sweep
layout ({threads}thread/nccl_{channel}channels/torch_profiler/rank{rank}/trace.json.gz,
four kernels each, every run's durations its own), timed cold (empty cache) and warm,
one fresh `jarvis sweep` process each. Prints the wall and CPU seconds, the cost per run
and the peak RSS, where a cold run's time goes (the same sweep without the trace snapshots,
then without the per-run cache too), and checks the target: N = 10,000 cold in <= 30 s.

    bench/sweep_scale.py [--runs 10000] [--jarvis build/jarvis] [--jobs N] [--keep DIR]
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def tiny_trace(seed: int) -> bytes:
    """A Kineto trace of one profiler step: four aten ops, each one launch and one kernel."""
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
         "ts": 1000.0, "dur": 200.0, "args": {"External id": 1}},
    ]
    t = 1010.0
    names = ["aten::mm", "aten::add", "aten::relu", "aten::sum"]
    kernels = ["ampere_sgemm_128x64_nn", "vectorized_elementwise_kernel_add",
               "vectorized_elementwise_kernel_relu", "reduce_kernel_sum"]
    gpu_t = 1100.0
    for i, (op, kernel) in enumerate(zip(names, kernels)):
        ext, corr = 10 + i, 100 + i
        kdur = 5.0 + (seed * 7 + i * 3) % 97 / 10.0
        events += [
            {"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": t, "dur": 30.0,
             "args": {"External id": ext, "Input Dims": [[64, 64], [64, 64]],
                      "Input type": ["float", "float"]}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
             "ts": t + 5, "dur": 10.0, "args": {"External id": ext, "correlation": corr}},
            {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": 1, "tid": 1, "ts": t + 5},
            {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": gpu_t,
             "dur": kdur, "args": {"External id": ext, "correlation": corr, "stream": 7,
                                   "device": 0, "grid": [64, 1, 1], "block": [256, 1, 1]}},
            {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": 0, "tid": 7,
             "ts": gpu_t, "bp": "e"},
        ]
        t += 40.0
        gpu_t += kdur + 2.0
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
           "traceEvents": events}
    return gzip.compress(json.dumps(doc).encode(), mtime=0)


def make_sweep(root: str, runs: int) -> None:
    channels = [28, 42, 56, 70]
    ranks = 2
    per_thread = len(channels) * ranks
    for k in range(runs):
        threads = k // per_thread + 1
        channel = channels[(k // ranks) % len(channels)]
        rank = k % ranks
        d = os.path.join(root, f"{threads}thread", f"nccl_{channel}channels", "torch_profiler",
                         f"rank{rank}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "trace.json.gz"), "wb") as f:
            f.write(tiny_trace(k))


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    if status != 0:
        sys.exit(f"failed ({status}): {' '.join(cmd)}\n{err[-2000:]}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10000)
    ap.add_argument("--jarvis", default=os.path.join(here, "..", "build", "jarvis"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep", help="build the sweep here and keep it")
    ap.add_argument("--target-s", type=float, default=30.0)
    args = ap.parse_args()

    tmp = args.keep or tempfile.mkdtemp(prefix="jarvis_sweep_scale.")
    root = os.path.join(tmp, "sweep")
    try:
        if not os.path.isdir(root):
            t0 = time.monotonic()
            make_sweep(root, args.runs)
            print(f"built {args.runs} runs in {time.monotonic() - t0:.1f} s")
        cache, out = os.path.join(tmp, "cache"), os.path.join(tmp, "out")
        # The trace snapshots go to a cache of the bench's own (the user's stays untouched,
        # and "cold" means no snapshot either).
        snapshots = os.path.join(tmp, "snapshots")
        env = dict(os.environ, JARVIS_CACHE_DIR=snapshots)
        cmd = [args.jarvis, "sweep", root, "--out", out, "--jobs", str(args.jobs), "--quiet"]

        def cold_run(run_cache: str, extra_env: dict[str, str] | None = None):
            for d in (cache, out, snapshots):
                shutil.rmtree(d, ignore_errors=True)
            return timed(cmd + ["--cache", run_cache], dict(env, **(extra_env or {})))

        print(f"machine: {os.cpu_count()} cores, load average "
              f"{' '.join(open('/proc/loadavg').read().split()[:3])}; "
              f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
        # Where a cold run's time goes: without the trace snapshots, then without the
        # per-run cache as well (the analysis and the sweep's own tables alone).
        no_snapshot = cold_run(cache, {"JARVIS_NO_SNAPSHOT": "1"})
        bare = cold_run("none", {"JARVIS_NO_SNAPSHOT": "1"})
        cold = cold_run(cache)
        shutil.rmtree(out, ignore_errors=True)
        warm = timed(cmd + ["--cache", cache], env)
        print("| sweep | wall s | CPU s | ms per run (wall) | peak RSS MB |")
        print("|---|---:|---:|---:|---:|")
        for label, m in (("cold", cold), ("cold, no trace snapshots", no_snapshot),
                         ("cold, no snapshots, no run cache", bare), ("warm (run cache)", warm)):
            print(f"| {args.runs} runs, {label} | {m[0]:.2f} | {m[1]:.2f} | "
                  f"{1000 * m[0] / args.runs:.2f} | {m[2]:.0f} |")
        def part(with_it, without_it) -> str:
            """A part's cost per run, as the difference of two sweeps' wall times: a
            difference below zero is the host's run-to-run noise, said as such."""
            ms = 1000 * (with_it[0] - without_it[0]) / args.runs
            return f"{ms:.2f} ms" if ms >= 0 else f"below this host's noise ({ms:.2f} ms)"

        print(f"\nper run, wall: analysis and tables {1000 * bare[0] / args.runs:.2f} ms, "
              f"run-cache writes {part(no_snapshot, bare)}, "
              f"snapshot writes {part(cold, no_snapshot)}; "
              f"a warm run (cache read) {1000 * warm[0] / args.runs:.2f} ms")
        print(f"\ntarget: cold {cold[0]:.1f} s <= {args.target_s:.0f} s: "
              f"{'met' if cold[0] <= args.target_s else 'MISSED'}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
