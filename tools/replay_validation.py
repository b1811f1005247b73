#!/usr/bin/env python3
"""Runs every jarvis replay package under a directory on the GPU and writes
the validation table (markdown and JSON): per op the trace's GPU time per
call, the replay's GPU time per call (CUDA-graph replay), their ratio, the
host launch-inclusive time, and whether the replay launched the trace's
kernels. Needs only python3 and PyTorch.

    tools/replay_validation.py PACKAGES_DIR --out RESULTS_DIR [--iters N]

A package directory holds replay.py and replay_ir.json (jarvis replay or the
make_replay MCP tool). Targets (docs/replay-validation.md): ratio within
0.8-1.25 for ops of >= 10 us, within 0.5-2 below that.
"""
import argparse
import json
import os
import subprocess
import sys


def in_target(trace_us, ratio):
    if ratio is None or trace_us is None:
        return None
    lo, hi = (0.8, 1.25) if trace_us >= 10 else (0.5, 2.0)
    return lo <= ratio <= hi


def run_package(pkg, out_dir, iters):
    results = os.path.join(out_dir, os.path.basename(pkg) + ".json")
    cmd = [sys.executable, os.path.join(pkg, "replay.py"), os.path.join(pkg, "replay_ir.json"),
           "--device", "cuda", "--profile-kernels", "--iters", str(iters),
           "--results-json", results]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    with open(os.path.join(out_dir, os.path.basename(pkg) + ".log"), "w") as f:
        f.write(proc.stdout + proc.stderr)
    if not os.path.exists(results):
        return []
    with open(results) as f:
        return json.load(f)["ops"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("packages")
    p.add_argument("--out", required=True)
    p.add_argument("--iters", type=int, default=20)
    opts = p.parse_args()
    os.makedirs(opts.out, exist_ok=True)
    rows = []
    for name in sorted(os.listdir(opts.packages)):
        pkg = os.path.join(opts.packages, name)
        if not os.path.isfile(os.path.join(pkg, "replay_ir.json")):
            continue
        for op in run_package(pkg, opts.out, opts.iters):
            trace_us = op.get("trace_gpu_us_mean")
            rows.append({"package": name, "op": op["name"], "status": op["status"],
                         "trace_us": trace_us, "replay_us": op.get("replay_us_median"),
                         "ratio": op.get("ratio"), "spread": op.get("replay_us_spread"),
                         "host_us": (op.get("replay_host_us") or {}).get("median"),
                         "method": op.get("timing_method"),
                         "kernel_match": op.get("kernel_names_match"),
                         "in_target": in_target(trace_us, op.get("ratio")),
                         "error": op.get("error"), "notes": op.get("notes", [])})
    with open(os.path.join(opts.out, "validation.json"), "w") as f:
        json.dump(rows, f, indent=1)
    fmt = lambda x, spec=".2f": "-" if x is None else format(x, spec)
    lines = ["| package | op | trace µs | replay µs | ratio | host µs | method | kernels match | "
             "in target |", "|---|---|---:|---:|---:|---:|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['package']} | {r['op']} | {fmt(r['trace_us'])} | {fmt(r['replay_us'])} | "
                     f"{fmt(r['ratio'])} | {fmt(r['host_us'])} | {r['method'] or r['status']} | "
                     f"{r['kernel_match']} | {r['in_target']} |")
    ok = [r for r in rows if r["status"] == "ok"]
    big = [r for r in ok if r["trace_us"] and r["trace_us"] >= 10]
    small = [r for r in ok if r["trace_us"] and r["trace_us"] < 10]
    matched = [r for r in ok if r["kernel_match"] is not None]
    summary = {
        "ops": len(rows), "ran": len(ok),
        "in_target_ge_10us": f"{sum(bool(r['in_target']) for r in big)}/{len(big)}",
        "in_target_lt_10us": f"{sum(bool(r['in_target']) for r in small)}/{len(small)}",
        "kernel_names_match": f"{sum(bool(r['kernel_match']) for r in matched)}/{len(matched)}",
    }
    lines.append("")
    lines.append("Summary: " + json.dumps(summary))
    with open(os.path.join(opts.out, "validation.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[-1:]))
    for r in rows:
        if r["status"] != "ok":
            print(f"FAILED {r['package']} {r['op']}: {r['error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
