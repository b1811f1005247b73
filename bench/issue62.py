#!/usr/bin/env python3
"""Issue 62's targets, each against its baseline measured in the same run:

  1. a 128 MB trace (GPT-2 H100 training trace tiled 32x) reported cold in <= 0.5x the
     single-threaded floor (gunzip + simdjson pass of the same file), peak RSS <= 1.5x JSON;
  2. the x4 copy (16 MB) reported in <= 0.8x its floor; a second load of a trace in one
     process (from its snapshot) <= 0.1x of the first (from JSON), on x4 and x32;
  3. 10,000 distinct tiny runs swept cold in <= 30 s (bench/sweep_scale.py).

    bench/issue62.py [--build build] [--repeat 3] [--runs 10000]

Prints jarvis_bench's tables and one line per target: measured, baseline, ratio, met or MISSED.
For targets 1 and 2 it also prints what this host allows the report at best, from the same run:
the gzip stream inflates on one thread (ISA-L alone, the fastest inflater here) before the load
can end, and the call tree, sheets and files need the whole load, so no parse, however fast,
reports in less than ISA-L's inflate plus the report run from a snapshot less that snapshot's
load (process start, call tree, sheets, writing). Where that bound is above the limit, the
target cannot be met on this host by a faster parse alone.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def table_rows(text: str, first_header: str) -> list[list[str]]:
    """The rows of the markdown table whose header starts with `first_header`."""
    rows, inside = [], False
    for line in text.splitlines():
        if line.startswith("| " + first_header):
            inside = True
            continue
        if inside:
            if not line.startswith("|"):
                break
            if line.startswith("|---"):
                continue
            rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def run(cmd: list[str]) -> str:
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    print(out)
    return out


def verdict(label: str, value: float, limit: float, what: str) -> bool:
    ok = value <= limit
    print(f"target {label}: {what} = {value:.3f} <= {limit}: {'met' if ok else 'MISSED'}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10000)
    args = ap.parse_args()
    shared = os.environ.get("JARVIS_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
    bench = os.path.join(args.build, "jarvis_bench")
    jarvis = os.path.join(args.build, "jarvis")
    with tempfile.TemporaryDirectory(prefix="jarvis_issue62.") as tmp:
        traces = {}
        for copies in (4, 32):
            traces[copies] = os.path.join(tmp, f"gpt2_x{copies}.json.gz")
            subprocess.run([sys.executable, os.path.join(shared, "bench", "tile_trace.py"),
                            os.path.join(shared, "hw_pairs", "gpt2_train", "h100.json.gz"),
                            traces[copies], "--copies", str(copies)], check=True,
                           capture_output=True)
        report = run([bench, "--jarvis", jarvis, "--cmd", "report", "--repeat",
                      str(args.repeat), traces[4], traces[32]])
        loads = run([bench, "--in-process", "--repeat", str(args.repeat), traces[4], traces[32]])
        sweep = subprocess.run([sys.executable, os.path.join(HERE, "sweep_scale.py"), "--runs",
                                str(args.runs), "--jarvis", jarvis], check=True,
                               capture_output=True, text=True).stdout
        print(sweep)

    rows = {r[0]: r for r in table_rows(report, "trace | events | JSON MB")}
    x4 = next(r for k, r in rows.items() if "gpt2_x4" in k)
    x32 = next(r for k, r in rows.items() if "gpt2_x32" in k)
    floors = {r[0]: r for r in table_rows(report, "trace | gunzip wall s")}
    snapshot_loads = {r[0]: r for r in table_rows(loads, "trace | events | load from JSON")}

    def bound(row: list[str], limit: float, label: str) -> None:
        """What this host allows a report of this trace at best (see the docstring)."""
        floor = float(row[3].split()[0])
        inflate = float(floors[row[0]][2])
        after_load = float(row[9]) - float(snapshot_loads[row[0]][3])
        best = inflate + after_load
        print(f"target {label}: bound on this host, any parse: ISA-L inflate {inflate:.3f} s + "
              f"start, tree, sheets and files {after_load:.3f} s = {best:.3f} s = "
              f"{best / floor:.2f}x the floor ({floor:.3f} s); limit {limit}x: "
              f"{'reachable' if best / floor <= limit else 'out of reach here'}")

    # Columns: 7 cold / floor wall, 14 RSS / JSON.
    results = [
        verdict("1", float(x32[7]), 0.5, "gpt2_x32 (128 MB) report cold / floor, wall"),
        verdict("1", float(x32[14]), 1.5, "gpt2_x32 peak RSS / JSON"),
        verdict("2", float(x4[7]), 0.8, "gpt2_x4 (16 MB) report cold / floor, wall"),
    ]
    for r in table_rows(loads, "trace | events | load from JSON"):
        results.append(verdict("2", float(r[4]), 0.1, f"{r[0]} second load / first load"))
    bound(x32, 0.5, "1")
    bound(x4, 0.8, "2")
    cold = re.search(r"\| (\d+) runs, cold \| ([0-9.]+) \|", sweep)
    results.append(verdict("3", float(cold.group(2)), 30.0,
                           f"{cold.group(1)} tiny runs swept cold, wall s"))
    print("target 4 (the server's trace cache: default budget, LRU eviction, said in the "
          "reloading call's result) is a test: tests/security/test_security_tools.cpp")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
