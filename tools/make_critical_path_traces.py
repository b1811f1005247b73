#!/usr/bin/env python3
"""Write an N-rank data-parallel job as Kineto traces, from scratch.

Every rank runs the same host program per iteration (ProfilerStep#i): K GEMM
launches (aten::mm -> cudaLaunchKernel), an allreduce launch
(record_param_comms -> cudaLaunchKernel of an NCCL kernel on its own stream),
then cudaDeviceSynchronize. Each rank has its own GEMM time; the allreduce
starts on a rank once its GEMMs are done (the NCCL stream waits for the
compute stream) and ends on every rank when the last rank arrived plus the
transfer time. Each rank's clock is shifted by its own offset.

The timeline is simulated here with the rules stated in simulate(); OUT/truth.json
holds what the tests check: the step time, the straggler and its GEMM time on
the path, each rank's wait for the straggler, and the step time predicted
when the straggler's GEMMs run at another speed. Standard library only.
"""

import argparse
import gzip
import json
import os
import statistics

GEMM_KERNEL = "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_cgasize1x2x1"
NCCL_KERNEL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"

# Host program (us): first launch h0 after the step starts, one launch every
# h, launch calls take ld, a kernel starts lat after its launch call starts
# (or when its stream frees), the sync call follows the allreduce launch by
# h_sync, returns sync_lat after the GPU finished; the step ends tail later.
H0, H, LD, LAT, H_SYNC, SYNC_LAT, TAIL = 20.0, 10.0, 4.0, 5.0, 10.0, 3.0, 15.0


def simulate(gemm_us, k, transfer, iters, t0=1000.0):
    """Per rank and iteration: host calls, kernel intervals (true time)."""
    ranks = len(gemm_us)
    steps = []
    start = t0
    for _ in range(iters):
        launches = [start + H0 + j * H for j in range(k)]
        coll_launch = start + H0 + k * H
        sync_call = coll_launch + H_SYNC
        per_rank, arrivals = [], []
        for r in range(ranks):
            prev_end, kernels = 0.0, []
            for t in launches:
                ts = max(t + LAT, prev_end)
                kernels.append((ts, gemm_us[r]))
                prev_end = ts + gemm_us[r]
            arrivals.append(max(coll_launch + LAT, prev_end))
            per_rank.append(kernels)
        done = max(arrivals) + transfer
        sync_end = max(sync_call, done) + SYNC_LAT
        assert done > sync_call, "the sync must wait for the GPU"
        end = sync_end + TAIL
        steps.append({"start": start, "end": end, "launches": launches,
                      "coll_launch": coll_launch, "sync_call": sync_call,
                      "sync_end": sync_end, "kernels": per_rank,
                      "arrivals": arrivals, "done": done})
        start = end
    return steps


def events_for_rank(r, steps, offset, world):
    pid, tid, dev_pid = 4000 + r, 4000 + r, 0
    ev, corr = [], 1
    shift = lambda t: t + offset  # noqa: E731

    def x(cat, name, ts, dur, p, t, args):
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": p, "tid": t,
                   "ts": shift(ts), "dur": dur, "args": args})

    def launch(ts, kernel, kts, kdur, stream, extra):
        nonlocal corr
        x("cuda_runtime", "cudaLaunchKernel", ts, LD, pid, tid,
          {"External id": corr, "correlation": corr})
        args = {"External id": corr, "correlation": corr, "device": 0, "stream": stream}
        args.update(extra)
        x("kernel", kernel, kts, kdur, dev_pid, stream, args)
        ev.append({"ph": "s", "id": corr, "pid": pid, "tid": tid, "ts": shift(ts),
                   "cat": "ac2g", "name": "ac2g"})
        ev.append({"ph": "f", "id": corr, "pid": dev_pid, "tid": stream, "ts": shift(kts),
                   "cat": "ac2g", "name": "ac2g", "bp": "e"})
        corr += 1

    for i, s in enumerate(steps):
        x("user_annotation", f"ProfilerStep#{i}", s["start"], s["end"] - s["start"], pid, tid, {})
        for t, (kts, kdur) in zip(s["launches"], s["kernels"][r]):
            x("cpu_op", "aten::mm", t - 1.0, LD + 2.0, pid, tid,
              {"Input Dims": [[256, 256], [256, 256]], "Input type": ["float", "float"]})
            launch(t, GEMM_KERNEL, kts, kdur, 7, {})
        arrive = s["arrivals"][r]
        x("cpu_op", "record_param_comms", s["coll_launch"] - 1.0, LD + 2.0, pid, tid, {})
        launch(s["coll_launch"], NCCL_KERNEL, arrive, s["done"] - arrive, 13, {
            "Collective name": "allreduce", "In msg nelems": 1048576,
            "Out msg nelems": 1048576, "Group size": world, "dtype": "Float",
            "In split size": "[]", "Out split size": "[]", "Process Group Name": "0",
            "Process Group Description": "default_pg",
            "Process Group Ranks": str(list(range(world)))})
        x("cuda_runtime", "cudaDeviceSynchronize", s["sync_call"],
          s["sync_end"] - s["sync_call"], pid, tid, {"correlation": corr})
        corr += 1
    return ev


def step_times(steps):
    return [s["end"] - s["start"] for s in steps]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--gemms", type=int, default=8, help="GEMM launches per iteration")
    ap.add_argument("--gemm-us", default="50,50,80,52",
                    help="GEMM time per rank (comma list, one per rank)")
    ap.add_argument("--transfer-us", type=float, default=100.0)
    opts = ap.parse_args()
    gemm = [float(v) for v in opts.gemm_us.split(",")]
    assert len(gemm) == opts.ranks, "one GEMM time per rank"
    assert min(gemm) > H, "the GEMMs must keep the GPU busy (GPU-bound ranks)"
    steps = simulate(gemm, opts.gemms, opts.transfer_us, opts.iterations)
    offsets = [1000.0 * r + 0.25 * (r % 4) for r in range(opts.ranks)]
    os.makedirs(opts.out, exist_ok=True)
    for r in range(opts.ranks):
        doc = {"schemaVersion": 1,
               "distributedInfo": {"backend": "nccl", "rank": r, "world_size": opts.ranks},
               "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
               "traceEvents": events_for_rank(r, steps, offsets[r], opts.ranks)}
        with gzip.open(os.path.join(opts.out, f"rank{r}.json.gz"), "wt") as f:
            json.dump(doc, f)

    straggler = max(range(opts.ranks), key=lambda r: (gemm[r], -r))
    times = step_times(steps)
    step = sum(times) / len(times)
    straggler_gemm = opts.gemms * gemm[straggler]  # its GEMMs run back to back on the path
    waits = {}
    for s in steps:
        last = max(range(opts.ranks), key=lambda r: (s["arrivals"][r], -r))
        for r in range(opts.ranks):
            if r != last and s["arrivals"][last] > s["arrivals"][r]:
                key = f"{r}:{last}"
                waits[key] = waits.get(key, 0.0) + (s["arrivals"][last] - s["arrivals"][r])
    waits = {k: v / len(steps) for k, v in waits.items()}
    others = [g for r, g in enumerate(gemm) if r != straggler]
    fast = list(gemm)
    fast[straggler] = min(others)
    totals = [opts.gemms * g for g in gemm]
    median = list(gemm)
    median[straggler] = statistics.median(totals) / opts.gemms
    partial = list(gemm)
    partial[straggler] = gemm[straggler] * 0.9
    truth = {
        "ranks": opts.ranks, "iterations": opts.iterations, "gemm_us": gemm,
        "clock_offset_us": offsets, "step_time_us": step, "straggler": straggler,
        "straggler_gemm_us": straggler_gemm, "straggler_share": straggler_gemm / step,
        "waits_us": waits,
        "what_if_fastest_other": {
            "rank": straggler, "category": "GEMM", "factor": min(others) / gemm[straggler],
            "predicted_step_time_us": sum(step_times(simulate(
                fast, opts.gemms, opts.transfer_us, opts.iterations))) / opts.iterations},
        "what_if_partial": {
            "rank": straggler, "category": "GEMM", "factor": 0.9,
            "predicted_step_time_us": sum(step_times(simulate(
                partial, opts.gemms, opts.transfer_us, opts.iterations))) / opts.iterations},
        "what_if_median": {
            "rank": straggler, "category": "GEMM",
            "predicted_step_time_us": sum(step_times(simulate(
                median, opts.gemms, opts.transfer_us, opts.iterations))) / opts.iterations},
    }
    with open(os.path.join(opts.out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)


if __name__ == "__main__":
    main()
