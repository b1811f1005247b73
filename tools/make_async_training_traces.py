#!/usr/bin/env python3
"""Write an asynchronous N-rank training job as Kineto traces, from scratch.

Unlike make_critical_path_traces.py (a device sync ends every step, so the
host and the GPU meet at each step end), this job looks like a real PyTorch
training loop: the host only queues work and runs ahead of the GPU.

Per iteration (ProfilerStep#i) every rank's host thread:
  * optionally stalls in the data loader (--stall-us on every --stall-every-th
    iteration after a sync: the host is late, the GPU idles);
  * launches K GEMMs (aten::mm -> cudaLaunchKernel), or one cudaGraphLaunch
    that runs all K (--cuda-graph), then an elementwise kernel (aten::add_);
  * with several ranks: cudaEventRecord, cudaStreamWaitEvent and the
    allreduce launch on the NCCL stream. The NCCL stream waits for the GEMMs
    but no cuda_sync record says so (Kineto writes them only with
    enable_cuda_sync_events): the wait is not recorded;
  * launches the optimizer kernel (aten::_foreach_add_), which waits for the
    allreduce (work.wait());
  * every --sync-every-th iteration calls loss.item(): a cudaMemcpyAsync of
    the loss and a cudaStreamSynchronize that returns once the GPU finished.
Before ProfilerStep#0 the GPU still runs --lead-us of earlier work (a kernel
launched before the profiled window): the host starts the window ahead.

The GPU follows the rules simulate() states: an op starts when its launch
call started plus the launch latency, its stream is free and what it waits
for ended; a collective ends on every rank --transfer-us after the last rank
arrived. OUT/truth.json holds what the tests check, all from this
simulation: each iteration's window (it ends when the host left the step and
the GPU work launched in it ended; after the first it starts where the one
before ended), which side bounds it (by construction: a stall longer than the
GPU's queue is host-bound, the rest GPU-bound), the step time, the straggler,
and the step time after what-ifs (GEMMs x 0.5 on every rank, the straggler's
GEMMs at the fastest other rank's speed, no host gaps inside the iterations).
Standard library only.
"""

import argparse
import gzip
import json
import os

GEMM_KERNEL = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cgasize1x2x1"
ADD_KERNEL = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"
OPT_KERNEL = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<TensorListMetadata<4>>"
NCCL_KERNEL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
LEAD_KERNEL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"

# Host program (us): the first launch h0 after the step starts, one call
# every h, calls take ld; a kernel starts lat after its launch call started
# (or later, when its stream or what it waits for frees it); a sync returns
# sync_lat after the GPU finished; the step ends tail after the last call.
H0, H, LD, LAT, SYNC_LAT, TAIL = 20.0, 10.0, 4.0, 5.0, 3.0, 15.0
ADD_US, OPT_US = 30.0, 40.0
COMPUTE, NCCL = 7, 13


class Rank:
    """One rank's host calls and GPU ops, filled by simulate()."""

    def __init__(self):
        self.calls = []  # (name, ts, dur, corr, cpu_op name or None, step)
        self.ops = []  # (kind, name, ts, dur, stream, corr, extra args)
        self.stream_end = {COMPUTE: 0.0, NCCL: 0.0}


def simulate(cfg, gemm_us, host_gaps=True):
    """Runs the host programs and the GPU; returns ranks, iteration bounds.

    host_gaps=False replays the job as a CUDA graph of each step (the what-if
    'remove launch gaps'): no host time between calls inside the profiled
    steps and the launch calls take none either (one graph launch replaces
    them); a stall (input work, a DataLoader's __next__) stays, as syncs do.
    """
    n = len(gemm_us)
    ranks = [Rank() for _ in range(n)]
    corr = [1] * n
    t0 = 1000.0
    gap = (lambda g: g) if host_gaps else (lambda g: 0.0)
    ld = LD if host_gaps else 0.0  # a launch call's own time

    def gpu_op(r, kind, name, launch, dur, stream, c, after=0.0, extra=None):
        ts = max(launch + LAT, ranks[r].stream_end[stream], after)
        ranks[r].stream_end[stream] = ts + dur
        ranks[r].ops.append((kind, name, ts, dur, stream, c, extra or {}))
        return ts

    def call(r, name, ts, dur=LD, cpu=None, step=None):
        c = corr[r]
        corr[r] += 1
        ranks[r].calls.append((name, ts, dur, c, cpu, step))
        return c

    # Earlier work still on the GPU when the window opens.
    for r in range(n):
        c = call(r, "cudaLaunchKernel", t0 - 50.0, cpu="aten::fill_")
        gpu_op(r, "kernel", LEAD_KERNEL, t0 - 50.0, cfg.lead_us, COMPUTE, c)
    host = [t0] * n  # each host's clock (all run the same program)
    steps = []
    since_sync = 0
    for i in range(cfg.iterations):
        start = host[0]
        stall = cfg.stall_us if (cfg.stall_every and since_sync == 0 and i > 0
                                 and (i // cfg.sync_every) % cfg.stall_every == 0) else 0.0
        sync = cfg.sync_every and (i + 1) % cfg.sync_every == 0
        arrivals, launched = [], []
        for r in range(n):
            # A stall is input work (a DataLoader's __next__): a CUDA graph keeps
            # it, and the host gap it fills most of (the critical path labels
            # such a gap host_input whole).
            t = start + (stall + H0 if stall and not host_gaps else 0.0) + gap(stall + H0)
            first_ops = len(ranks[r].ops)
            if cfg.cuda_graph:
                c = call(r, "cudaGraphLaunch", t, cpu="aten::mm", step=i)
                for _ in range(cfg.gemms):
                    gpu_op(r, "kernel", GEMM_KERNEL, t, gemm_us[r], COMPUTE, c)
                t += ld + gap(H - LD)
            else:
                for _ in range(cfg.gemms):
                    c = call(r, "cudaLaunchKernel", t, cpu="aten::mm", step=i)
                    gpu_op(r, "kernel", GEMM_KERNEL, t, gemm_us[r], COMPUTE, c)
                    t += ld + gap(H - LD)
            c = call(r, "cudaLaunchKernel", t, cpu="aten::add_", step=i)
            gpu_op(r, "kernel", ADD_KERNEL, t, ADD_US, COMPUTE, c)
            t += ld + gap(H - LD)
            host[r] = t
            launched.append(first_ops)
            if n > 1:
                call(r, "cudaEventRecord", t, step=i)
                t += ld + gap(H - LD)
                call(r, "cudaStreamWaitEvent", t, step=i)
                t += ld + gap(H - LD)
                c = call(r, "cudaLaunchKernel", t, cpu="record_param_comms", step=i)
                # The NCCL stream waits for the compute stream (not recorded).
                arrivals.append((max(t + LAT, ranks[r].stream_end[NCCL],
                                     ranks[r].stream_end[COMPUTE]), c, t))
                t += ld + gap(H - LD)
                host[r] = t
        done = max(a for a, _, _ in arrivals) + cfg.transfer_us if n > 1 else 0.0
        for r in range(n):
            t = host[r]
            if n > 1:
                arrive, c, _ = arrivals[r]
                ranks[r].ops.append(("kernel", NCCL_KERNEL, arrive, done - arrive, NCCL, c,
                                     {"collective": i}))
                ranks[r].stream_end[NCCL] = done
            c = call(r, "cudaLaunchKernel", t, cpu="aten::_foreach_add_", step=i)
            gpu_op(r, "kernel", OPT_KERNEL, t, OPT_US, COMPUTE, c, after=done)
            t += ld + gap(H - LD)
            if sync:
                c = call(r, "cudaMemcpyAsync", t, cpu="aten::_local_scalar_dense", step=i)
                gpu_op(r, "gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", t, 1.0, COMPUTE, c)
                t += ld + gap(H - LD)
                ret = max(t, ranks[r].stream_end[COMPUTE] + SYNC_LAT)
                call(r, "cudaStreamSynchronize", t, dur=ret - t, step=i)
                t = ret
            host[r] = t + gap(TAIL)
        end_host = host[0]
        assert all(h == end_host for h in host), "the hosts run the same program"
        gpu_end = max(max(o[2] + o[3] for o in ranks[r].ops[launched[r]:]) for r in range(n))
        steps.append({"name": f"ProfilerStep#{i}", "start": start, "host_end": end_host,
                      "gpu_end": gpu_end, "stall": stall, "sync": bool(sync)})
        since_sync = 0 if sync else since_sync + 1
    # Iteration windows: over once the host left the step and its GPU work
    # ended; after the first, from where the previous one ended.
    prev = None
    for s in steps:
        s["end"] = max(s["host_end"], s["gpu_end"])
        s["window_start"] = s["start"] if prev is None else min(max(s["start"], prev), s["end"])
        prev = s["end"]
    return ranks, steps


def events_for_rank(r, rank, steps, offset, world):
    pid, tid, dev = 4000 + r, 4000 + r, 0
    ev = []
    shift = lambda t: t + offset  # noqa: E731

    def x(cat, name, ts, dur, p, t, args):
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": p, "tid": t,
                   "ts": shift(ts), "dur": dur, "args": args})

    for s in steps:
        x("user_annotation", s["name"], s["start"], s["host_end"] - s["start"], pid, tid, {})
        if s["stall"]:
            x("user_annotation", "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
              s["start"], s["stall"], pid, tid, {})
    by_corr = {}
    for op in rank.ops:
        by_corr.setdefault(op[5], []).append(op)
    for name, ts, dur, corr, cpu, _ in rank.calls:
        if cpu:
            x("cpu_op", cpu, ts - 1.0, dur + 2.0, pid, tid,
              {"Input Dims": [[1024, 1024], [1024, 1024]] if cpu == "aten::mm" else [],
               "Input type": ["c10::BFloat16", "c10::BFloat16"] if cpu == "aten::mm" else []})
        x("cuda_runtime", name, ts, dur, pid, tid, {"External id": corr, "correlation": corr})
        for k, (kind, kname, kts, kdur, stream, _, extra) in enumerate(by_corr.get(corr, [])):
            args = {"External id": corr, "correlation": corr, "device": dev, "stream": stream}
            if "collective" in extra:
                args.update({"Collective name": "allreduce", "In msg nelems": 1048576,
                             "Out msg nelems": 1048576, "Group size": world, "dtype": "BFloat16",
                             "In split size": "[]", "Out split size": "[]",
                             "Process Group Name": "0", "Process Group Description": "default_pg",
                             "Process Group Ranks": str(list(range(world)))})
            x(kind, kname, kts, kdur, dev, stream, args)
            if name != "cudaGraphLaunch" or k == 0:
                ev.append({"ph": "s", "id": corr, "pid": pid, "tid": tid, "ts": shift(ts),
                           "cat": "ac2g", "name": "ac2g"})
                ev.append({"ph": "f", "id": corr, "pid": dev, "tid": stream, "ts": shift(kts),
                           "cat": "ac2g", "name": "ac2g", "bp": "e"})
    return ev


def mean_step(steps):
    return sum(s["end"] - s["window_start"] for s in steps) / len(steps)


def gpu_idle(rank, lo, hi):
    busy = sorted((max(o[2], lo), min(o[2] + o[3], hi)) for o in rank.ops
                  if o[2] < hi and o[2] + o[3] > lo)
    covered, cur = 0.0, None
    for a, b in busy:
        if cur is None or a > cur[1]:
            covered += 0 if cur is None else cur[1] - cur[0]
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    covered += 0 if cur is None else cur[1] - cur[0]
    return (hi - lo) - covered


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=6)
    ap.add_argument("--gemms", type=int, default=8, help="GEMMs per iteration")
    ap.add_argument("--gemm-us", default="50", help="GEMM time per rank (comma list)")
    ap.add_argument("--transfer-us", type=float, default=100.0)
    ap.add_argument("--lead-us", type=float, default=500.0,
                    help="GPU work still queued when the profiled window opens")
    ap.add_argument("--sync-every", type=int, default=3, help="loss.item() every k iterations")
    ap.add_argument("--stall-us", type=float, default=0.0, help="data-loader stall")
    ap.add_argument("--stall-every", type=int, default=0,
                    help="stall in the first iteration after every k-th sync (0: never)")
    ap.add_argument("--cuda-graph", action="store_true", help="the GEMMs as one graph launch")
    opts = ap.parse_args()
    gemm = [float(v) for v in opts.gemm_us.split(",")]
    assert len(gemm) == opts.ranks, "one GEMM time per rank"
    assert opts.sync_every >= 1
    ranks, steps = simulate(opts, gemm)
    offsets = [1000.0 * r + 0.25 * (r % 4) for r in range(opts.ranks)]
    os.makedirs(opts.out, exist_ok=True)
    for r in range(opts.ranks):
        doc = {"schemaVersion": 1,
               "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
               "traceEvents": events_for_rank(r, ranks[r], steps, offsets[r], opts.ranks)}
        if opts.ranks > 1:
            doc["distributedInfo"] = {"backend": "nccl", "rank": r, "world_size": opts.ranks}
        with gzip.open(os.path.join(opts.out, f"rank{r}.json.gz"), "wt") as f:
            json.dump(doc, f)

    straggler = max(range(opts.ranks), key=lambda r: (gemm[r], -r))
    iterations = []
    for s in steps:
        lo, hi = s["window_start"], s["end"]
        idle = max(gpu_idle(rk, lo, hi) for rk in ranks)
        # By construction: a stall the GPU's queue does not cover leaves the
        # GPU idle most of the iteration, waiting for the host.
        bound = "host" if idle > 0.5 * (hi - lo) else "gpu"
        iterations.append({"name": s["name"], "start_us": lo, "end_us": hi,
                           "host_end_us": s["host_end"], "gpu_end_us": s["gpu_end"],
                           "bound_by": bound, "gpu_idle_us": idle, "stall_us": s["stall"],
                           "sync": s["sync"]})
    half = mean_step(simulate(opts, [g * 0.5 for g in gemm])[1])
    others = [g for r, g in enumerate(gemm) if r != straggler]
    fast = list(gemm)
    if others:
        fast[straggler] = min(others)
    truth = {
        "ranks": opts.ranks, "iterations": iterations, "gemm_us": gemm, "gemms": opts.gemms,
        "clock_shift_us": offsets,
        # jarvis's convention: added to the rank's timestamps to align it with rank 0.
        "clock_offset_us": [offsets[0] - o for o in offsets], "step_time_us": mean_step(steps), "straggler": straggler,
        "launch_latency_us": LAT,
        "what_if_gemm_half": {"category": "GEMM", "factor": 0.5, "predicted_step_time_us": half},
        "what_if_fastest_other": {
            "rank": straggler, "category": "GEMM",
            "factor": fast[straggler] / gemm[straggler],
            "predicted_step_time_us": mean_step(simulate(opts, fast)[1])},
        "what_if_no_host_gaps": {
            "predicted_step_time_us": mean_step(simulate(opts, gemm, host_gaps=False)[1])},
    }
    with open(os.path.join(opts.out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)


if __name__ == "__main__":
    main()
