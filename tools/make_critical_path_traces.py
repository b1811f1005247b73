#!/usr/bin/env python3
"""Write an N-rank data-parallel job as Kineto traces, from scratch.

Every rank runs the same host program per iteration (ProfilerStep#i): K GEMM
launches (aten::mm -> cudaLaunchKernel), an allreduce launch
(record_param_comms -> cudaLaunchKernel of an NCCL kernel on its own stream),
then cudaDeviceSynchronize. Each rank has its own GEMM time; the allreduce
starts on a rank once its GEMMs are done (the NCCL stream waits for the
compute stream) and ends on every rank when the last rank arrived plus the
transfer time. Each rank's clock is shifted by its own offset.

With --record-wait-after N the allreduce waits through a recorded CUDA event
instead, as DDP's gradient buckets do: after the Nth GEMM launch the host
calls cudaEventRecord on the compute stream, launches the remaining GEMMs,
then cudaStreamWaitEvent on the NCCL stream and the allreduce launch. The
allreduce starts once GEMM N is done while the later GEMMs still run. The
GPU-side cuda_sync "Stream Wait Event" records that Kineto writes with
enable_cuda_sync_events name the record's correlation id and its stream (on
odd iterations only through a "cuda_event" record, wait_on_stream = -1);
--no-sync-records leaves them out (the waits must then be inferred).
--no-profiler-step leaves out the ProfilerStep#N annotations.

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


def simulate(gemm_us, k, transfer, iters, record_after=None, t0=1000.0):
    """Per rank and iteration: host calls, kernel intervals (true time).

    record_after=None: the allreduce waits for all K GEMMs (launched after
    them). record_after=N: the host records an event after the Nth GEMM
    launch (one launch slot), launches the other GEMMs, waits on the event
    (one slot) and launches the allreduce: it waits for GEMM N only.
    """
    ranks = len(gemm_us)
    steps = []
    start = t0
    for _ in range(iters):
        if record_after is None:
            launches = [start + H0 + j * H for j in range(k)]
            coll_launch = start + H0 + k * H
            record_call = wait_call = None
            waited = k
        else:
            slot = [j if j < record_after else j + 1 for j in range(k)]
            launches = [start + H0 + s * H for s in slot]
            record_call = start + H0 + record_after * H
            wait_call = start + H0 + (k + 1) * H
            coll_launch = start + H0 + (k + 2) * H
            waited = record_after
        sync_call = coll_launch + H_SYNC
        per_rank, arrivals = [], []
        for r in range(ranks):
            prev_end, kernels = 0.0, []
            for t in launches:
                ts = max(t + LAT, prev_end)
                kernels.append((ts, gemm_us[r]))
                prev_end = ts + gemm_us[r]
            ts, dur = kernels[waited - 1]
            arrivals.append(max(coll_launch + LAT, ts + dur))
            per_rank.append(kernels)
        done = max(arrivals) + transfer
        gpu_end = max(ts + dur for kernels in per_rank for ts, dur in kernels)
        assert done > gpu_end, "the allreduce must end last (raise --transfer-us)"
        sync_end = max(sync_call, done) + SYNC_LAT
        assert done > sync_call, "the sync must wait for the GPU"
        end = sync_end + TAIL
        steps.append({"start": start, "end": end, "launches": launches,
                      "coll_launch": coll_launch, "sync_call": sync_call,
                      "record_call": record_call, "wait_call": wait_call,
                      "sync_end": sync_end, "kernels": per_rank,
                      "arrivals": arrivals, "done": done})
        start = end
    return steps


def events_for_rank(r, steps, offset, world, profiler_step=True, sync_records=True):
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

    def runtime(name, ts):
        nonlocal corr
        x("cuda_runtime", name, ts, LD, pid, tid, {"External id": corr, "correlation": corr})
        corr += 1
        return corr - 1

    for i, s in enumerate(steps):
        if profiler_step:
            x("user_annotation", f"ProfilerStep#{i}", s["start"], s["end"] - s["start"], pid, tid,
              {})
        record_corr = None
        for t, (kts, kdur) in zip(s["launches"], s["kernels"][r]):
            if s["record_call"] is not None and record_corr is None and t > s["record_call"]:
                record_corr = runtime("cudaEventRecord", s["record_call"])
            x("cpu_op", "aten::mm", t - 1.0, LD + 2.0, pid, tid,
              {"Input Dims": [[256, 256], [256, 256]], "Input type": ["float", "float"]})
            launch(t, GEMM_KERNEL, kts, kdur, 7, {})
        if s["wait_call"] is not None:
            wait_corr = runtime("cudaStreamWaitEvent", s["wait_call"])
            if sync_records:
                known = i % 2 == 0  # odd iterations: the stream only in a cuda_event record
                x("cuda_sync", "Stream Wait Event", s["wait_call"] + 1.0, 0.5, dev_pid, 13,
                  {"cuda_sync_kind": "Stream Wait Event", "stream": 13, "device": 0,
                   "correlation": wait_corr, "context": 1, "wait_on_stream": 7 if known else -1,
                   "wait_on_cuda_event_record_corr_id": record_corr,
                   "wait_on_cuda_event_id": i + 1})
                if not known:
                    x("cuda_event", "Event Record", s["record_call"] + 1.0, 0.0, dev_pid, 7,
                      {"correlation": record_corr, "stream": 7, "device": 0, "event": i + 1})
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
    ap.add_argument("--record-wait-after", type=int, default=None,
                    help="record an event after this GEMM launch; the allreduce waits on it")
    ap.add_argument("--no-sync-records", action="store_true",
                    help="leave out the cuda_sync / cuda_event records of the waits")
    ap.add_argument("--no-profiler-step", action="store_true",
                    help="leave out the ProfilerStep#N annotations")
    opts = ap.parse_args()
    gemm = [float(v) for v in opts.gemm_us.split(",")]
    assert len(gemm) == opts.ranks, "one GEMM time per rank"
    assert min(gemm) > H, "the GEMMs must keep the GPU busy (GPU-bound ranks)"
    record = opts.record_wait_after
    assert record is None or 1 <= record < opts.gemms, "--record-wait-after: 1..gemms-1"

    def sim(g):
        return simulate(g, opts.gemms, opts.transfer_us, opts.iterations, record)

    steps = sim(gemm)
    offsets = [1000.0 * r + 0.25 * (r % 4) for r in range(opts.ranks)]
    os.makedirs(opts.out, exist_ok=True)
    for r in range(opts.ranks):
        doc = {"schemaVersion": 1,
               "distributedInfo": {"backend": "nccl", "rank": r, "world_size": opts.ranks},
               "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
               "traceEvents": events_for_rank(r, steps, offsets[r], opts.ranks,
                                              not opts.no_profiler_step,
                                              not opts.no_sync_records)}
        with gzip.open(os.path.join(opts.out, f"rank{r}.json.gz"), "wt") as f:
            json.dump(doc, f)

    straggler = max(range(opts.ranks), key=lambda r: (gemm[r], -r))
    times = step_times(steps)
    step = sum(times) / len(times)
    # Its GEMMs up to the one the allreduce waits for run back to back on the path.
    straggler_gemm = (record or opts.gemms) * gemm[straggler]
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
        "clock_shift_us": offsets,
        # jarvis's convention: added to the rank's timestamps to align it with rank 0.
        "clock_offset_us": [offsets[0] - o for o in offsets], "step_time_us": step, "straggler": straggler,
        "straggler_gemm_us": straggler_gemm, "straggler_share": straggler_gemm / step,
        "waits_us": waits,
        "record_wait_after": record,
        # Iterations as detected without ProfilerStep: from the first launch
        # of one to the first launch of the next; the last ends with the last
        # host call (the device sync).
        "iteration_bounds_us": [[s["launches"][0], steps[i + 1]["launches"][0]
                                 if i + 1 < len(steps) else s["sync_end"]]
                                for i, s in enumerate(steps)],
        "what_if_fastest_other": {
            "rank": straggler, "category": "GEMM", "factor": min(others) / gemm[straggler],
            "predicted_step_time_us": sum(step_times(sim(fast))) / opts.iterations},
        "what_if_partial": {
            "rank": straggler, "category": "GEMM", "factor": 0.9,
            "predicted_step_time_us": sum(step_times(sim(partial))) / opts.iterations},
        "what_if_median": {
            "rank": straggler, "category": "GEMM",
            "predicted_step_time_us": sum(step_times(sim(median))) / opts.iterations},
    }
    with open(os.path.join(opts.out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)


if __name__ == "__main__":
    main()
