#!/usr/bin/env python3
"""Prints the rows of a replay validation (tools/replay_validation.py) that
miss the timing target or launched other kernels than the trace, with the
kernel names side by side, for docs/replay-validation.md."""
import json
import os
import sys

out = sys.argv[1]
rows = json.load(open(os.path.join(out, "validation.json")))
for r in rows:
    if r["status"] == "ok" and r["in_target"] is not False and r["kernel_match"] is not False:
        continue
    print(f"{r['package']} {r['op']} trace={r['trace_us']} replay={r['replay_us']} "
          f"ratio={r['ratio']} method={r['method']} match={r['kernel_match']}")
    res = json.load(open(os.path.join(out, r["package"] + ".json")))
    for op in res["ops"]:
        if op["name"] == r["op"] and abs((op.get("trace_gpu_us_mean") or 0) - (r["trace_us"] or 0)) < 1e-9:
            print("   notes:", "; ".join(op.get("notes", []))[:300])
            print("   replay kernels:", [k["name"][:70] for k in op.get("replay_kernels", [])])
            break
