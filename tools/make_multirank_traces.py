#!/usr/bin/env python3
"""Derive an N-rank set of Kineto traces from one real single-rank trace.

Each rank gets a copy of the trace with distributedInfo.rank / world_size and
the process-group metadata rewritten for N ranks, its own clock (all
timestamps rebased and shifted by a per-rank offset), and known per-rank
arrival delays on every collective kernel: a rank arriving d_r after the
instance's earliest possible start waits (W - d_r) longer, W being the
instance's largest delay, so every rank leaves the collective at the same
moment (as synchronising collectives do) and the last rank's kernel keeps the
original duration (the time the data moved).

Writes OUT/rank<R>.json.gz and OUT/truth.json (offsets, delays, original
durations and message sizes per instance) for the tests to check against.
Standard library only.
"""

import argparse
import gzip
import json
import math
import os
import random
import re

COMM = re.compile(r"nccl|rccl|cross_device_reduce", re.IGNORECASE)
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def is_collective_kernel(ev):
    if ev.get("cat") != "kernel" or not COMM.search(ev.get("name", "")):
        return False
    args = ev.get("args", {})
    return args.get("correlation") is not None or args.get("External id") is not None


def collective_instances(events):
    """(process group, seq) -> event index, seq by start time within the group."""
    indices = [k for k, ev in enumerate(events) if is_collective_kernel(ev)]
    indices.sort(key=lambda k: events[k]["ts"])  # stable: file order on ties
    seqs, out = {}, {}
    for k in indices:
        group = str(events[k].get("args", {}).get("Process Group Name", "Unknown_Group"))
        seq = seqs.get(group, 0)
        seqs[group] = seq + 1
        out[(group, seq)] = k
    return out


def rewrite_group_metadata(ev, world):
    args = ev.get("args")
    if not isinstance(args, dict):
        return
    if "Process Group Ranks" in args:
        args["Process Group Ranks"] = str(list(range(world)))
    if "Group size" in args:
        args["Group size"] = world


def parse_drop(text):
    rank, group, seq = text.split(":")
    return int(rank), group, int(seq)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", required=True, help="single-rank Kineto trace (.json or .json.gz)")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-delay-us", type=float, default=40.0)
    ap.add_argument("--gpu-only", action="store_true",
                    help="keep only GPU events and metadata (small, fast traces)")
    ap.add_argument("--drop", action="append", default=[], metavar="RANK:GROUP:SEQ",
                    help="remove that collective instance from that rank's trace")
    opts = ap.parse_args()

    opener = gzip.open if opts.src.endswith(".gz") else open
    with opener(opts.src, "rt") as f:
        base = json.load(f)
    events = base["traceEvents"]
    if opts.gpu_only:
        events = [ev for ev in events if ev.get("cat") in GPU_CATS or ev.get("ph") == "M"]
    # Rebase on a whole microsecond: the subtraction is exact and the small
    # timestamps that result keep sub-picosecond resolution for the offsets.
    t0 = math.floor(min(ev["ts"] for ev in events if ev.get("ph") == "X"))
    instances = collective_instances(events)
    rng = random.Random(opts.seed)
    steps = int(opts.max_delay_us * 2)
    delays = {key: [rng.randint(0, steps) * 0.5 for _ in range(opts.ranks)]
              for key in sorted(instances)}
    offsets = [1000.0 * r + 0.25 * (r % 4) for r in range(opts.ranks)]
    drops = {parse_drop(d) for d in opts.drop}

    os.makedirs(opts.out, exist_ok=True)
    by_index = {k: key for key, k in instances.items()}
    for r in range(opts.ranks):
        rank_events = []
        for k, ev in enumerate(events):
            key = by_index.get(k)
            if key is not None and (r, key[0], key[1]) in drops:
                continue
            ev = dict(ev)  # shallow: only ts/dur and a few args change
            if isinstance(ev.get("args"), dict):
                ev["args"] = dict(ev["args"])
            if "ts" in ev and ev.get("ph") != "M":
                ev["ts"] = (ev["ts"] - t0) + offsets[r]
            if key is not None:
                wait = max(delays[key]) - delays[key][r]
                ev["ts"] -= wait
                ev["dur"] += wait
            rewrite_group_metadata(ev, opts.ranks)
            rank_events.append(ev)
        doc = {k: v for k, v in base.items() if k != "traceEvents"}
        info = dict(doc.get("distributedInfo", {}))
        info["rank"] = r
        info["world_size"] = opts.ranks
        info["pg_config"] = [dict(pg, pg_size=opts.ranks, ranks=list(range(opts.ranks)))
                             for pg in info.get("pg_config", [])]
        doc["distributedInfo"] = info
        doc["traceEvents"] = rank_events
        with gzip.open(os.path.join(opts.out, f"rank{r}.json.gz"), "wt", compresslevel=1) as f:
            json.dump(doc, f)

    # clock_shift_us: what this script added to each rank's timestamps;
    # clock_offset_us: what jarvis reports (collective_ranks.csv, collective_report,
    # critical_path): the microseconds added to a rank's timestamps to put them on
    # the lowest rank's clock, i.e. minus the shift, relative to rank 0.
    truth = {"ranks": opts.ranks, "clock_shift_us": offsets,
             "clock_offset_us": [offsets[0] - o for o in offsets], "instances": []}
    for (group, seq), k in sorted(instances.items()):
        ev, args = events[k], events[k].get("args", {})
        truth["instances"].append({
            "process_group": group, "seq": seq, "collective": args.get("Collective name"),
            "dtype": args.get("dtype"), "in_msg_nelems": args.get("In msg nelems"),
            "out_msg_nelems": args.get("Out msg nelems"), "dur_us": ev["dur"],
            "delays_us": delays[(group, seq)]})
    with open(os.path.join(opts.out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)


if __name__ == "__main__":
    main()
