#!/usr/bin/env python3
"""Critical path, what-if and insights against the number of host threads
(issue 74 point 7: 5.9 s on 30,000 threads, 22.7 s on 60,000).

Writes traces of N worker threads, each running one cpu_op around one kernel
launch, 200 us apart, while a main thread launches a kernel of its own between
them and records nothing else (each of its gaps is a wait through one
worker's op), then times `jarvis critical-path`, `jarvis what-if
--remove-op aten::add` and `jarvis insights` on each, the best of --repeat
runs. Near-linear work doubles the time when N doubles.

  bench/many_threads.py JARVIS [--threads 10000 20000 40000] [--repeat 3]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def write_trace(path, threads):
    events = []
    for k in range(threads):
        ts = k * 200.0
        events += [
            {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": k + 2, "ts": ts,
             "dur": 5},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
             "tid": k + 2, "ts": ts + 1, "dur": 1, "args": {"correlation": k + 1}},
            {"ph": "X", "cat": "kernel", "name": "add", "pid": 0, "tid": 7, "ts": ts + 3,
             "dur": 2, "args": {"correlation": k + 1, "stream": 7, "device": 0}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
             "ts": ts + 100, "dur": 1, "args": {"correlation": threads + k + 1}},
            {"ph": "X", "cat": "kernel", "name": "main", "pid": 0, "tid": 7, "ts": ts + 103,
             "dur": 2, "args": {"correlation": threads + k + 1, "stream": 7, "device": 0}},
        ]
    with open(path, "w") as f:
        json.dump({"traceEvents": events}, f)


def best_seconds(argv, repeat):
    best = float("inf")
    for _ in range(repeat):
        start = time.monotonic()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=dict(os.environ, JARVIS_NO_SNAPSHOT="1"))
        best = min(best, time.monotonic() - start)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jarvis")
    ap.add_argument("--threads", type=int, nargs="+", default=[10000, 20000, 40000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'threads':>8} {'MB':>6} {'critical-path':>14} {'what-if':>8} {'insights':>9}")
        for n in args.threads:
            trace = os.path.join(tmp, f"t{n}.json")
            write_trace(trace, n)
            out = os.path.join(tmp, f"out{n}")
            cp = best_seconds([args.jarvis, "critical-path", trace, "--out", out + "_cp"],
                              args.repeat)
            wi = best_seconds([args.jarvis, "what-if", trace, "--out", out + "_wi", "--remove-op",
                               "aten::add", "-q", "--force"], args.repeat)
            ins = best_seconds([args.jarvis, "insights", trace], args.repeat)
            mb = os.path.getsize(trace) / 1e6
            print(f"{n:>8} {mb:>6.1f} {cp:>13.2f}s {wi:>7.2f}s {ins:>8.2f}s")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
