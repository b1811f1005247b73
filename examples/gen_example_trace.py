#!/usr/bin/env python3
"""Generate examples/example_trace.json.gz: a small synthetic PyTorch-profiler (Kineto) trace.

The trace models two profiler steps of eager-mode inference of a tiny decoder-only
transformer (2 layers, d_model 1024, 16 heads, SwiGLU MLP, 32k vocabulary, batch 4 x 1024
tokens, bf16) on one H100. It is synthetic, produced by a small CPU/GPU timing simulation:
host ops advance a CPU clock, each launch enqueues its kernel on stream 7, and a kernel
starts when both the launch has reached the GPU and the previous kernel has finished. GPU
durations come from a FLOP/byte model with per-kernel efficiencies, so the numbers are
plausible for the hardware, and host overheads are sized so the GPU idles at step
boundaries and in launch-bound stretches.

What it contains, in the layout the PyTorch profiler writes:
  * top-level keys: schemaVersion, deviceProperties (H100), CUDA/CUPTI versions, record flags;
  * `M` process/thread metadata, the profiler span and global instants;
  * `user_annotation` ProfilerStep#N and its `gpu_user_annotation` projection;
  * `python_function` frames (with_stack + with_modules: `nn.Module: X_n` frames);
  * `cpu_op` events with External id, Input Dims / Input type / Input Strides / Concrete Inputs;
  * `cuda_runtime` calls with correlation + External id, `ac2g` s/f flow pairs;
  * kernels (cuBLAS GEMMs, flash attention, ATen elementwise/norm/reduce), one memset per
    step (cuBLAS workspace) and two memcpys per step (input ids H2D, next-token ids D2H).

Deterministic: a fixed seed, integer-nanosecond clocks, and a gzip header with mtime 0, so
re-running produces a byte-identical file. Python 3 standard library only.

Usage: python3 examples/gen_example_trace.py [--out PATH] [--seed N]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import os
import random

# ---------------------------------------------------------------------------------------
# Model and hardware
# ---------------------------------------------------------------------------------------
BATCH, SEQ, D_MODEL, HEADS, FF, VOCAB, LAYERS, STEPS = 4, 1024, 1024, 16, 4096, 32000, 2, 2
HEAD_DIM = D_MODEL // HEADS
TOKENS = BATCH * SEQ
BF16, FP32, I64 = 2, 4, 8

PEAK_TFLOPS = 989.0  # dense bf16 tensor-core peak of an H100 SXM
PEAK_TBPS = 3.35  # HBM3 bandwidth
NUM_SMS = 132

CPU_PID = 31337
GPU_PID, STREAM = 0, 7
T0_NS = 1_712_300_000_000_000  # start of the profiling window, in ns (ts is written in us)

DEVICE_PROPERTIES = [{
    "id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85031714816,
    "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32,
    "sharedMemPerBlock": 49152, "numSms": NUM_SMS, "regsPerMultiprocessor": 65536,
    "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472,
}]

# Kernel names as the CUDA libraries and ATen emit them.
K_GEMM_128x128 = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_"
                  "warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas")
K_GEMM_128x256 = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_"
                  "warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas")
K_GEMM_64x128 = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_"
                 "warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas")
K_FLASH = ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, "
           "128, 4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, "
           "128, 4, cutlass::bfloat16_t> >, false, true, false, false, false, true, false>"
           "(pytorch_flash::Flash_fwd_params)")
K_LAYER_NORM = ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, "
                "float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 "
                "const*, float*, float*, c10::BFloat16*)")
K_ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
         "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)")
K_MUL = ("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, "
         "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, "
         "std::array<char*, 3ul> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
         "c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)")
_SILU_FN = ("at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::"
            "operator()() const::{lambda()#6}::operator()() const::{lambda(c10::BFloat16)#1}")
K_SILU = (f"void at::native::vectorized_elementwise_kernel<4, {_SILU_FN}, std::array<char*, 2ul> >"
          f"(int, {_SILU_FN}, std::array<char*, 2ul>)")
_COPY_BF16 = ("at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
              "const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}")
K_STRIDED_COPY = (f"void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
                  f"{_COPY_BF16}>(at::TensorIteratorBase&, {_COPY_BF16} const&)::{{lambda(int)#1}}>"
                  f"(int, at::native::gpu_kernel_impl_nocast<{_COPY_BF16}>(at::TensorIteratorBase&, "
                  f"{_COPY_BF16} const&)::{{lambda(int)#1}})")
_COPY_F32 = ("at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
             "const::{lambda()#7}::operator()() const::{lambda(float)#1}")
K_CAST_COPY = (f"void at::native::unrolled_elementwise_kernel<{_COPY_F32}, std::array<char*, 2ul>, 4, "
               "TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
               "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >"
               f"(int, {_COPY_F32}, std::array<char*, 2ul>, TrivialOffsetCalculator<1, unsigned int>, "
               "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, "
               "at::native::memory::StoreWithCast<1>)")
K_INDEX_SELECT = ("void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, "
                  "unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned "
                  "int>, at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, "
                  "at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, "
                  "unsigned int, long)")
_ARGMAX_OP = ("at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4>")
K_ARGMAX = f"void at::native::reduce_kernel<512, 1, {_ARGMAX_OP} >({_ARGMAX_OP})"


def contiguous_strides(dims):
    strides, acc = [], 1
    for d in reversed(dims):
        strides.append(acc)
        acc *= d
    return list(reversed(strides))


def fmt_us(ns: int) -> str:
    """Microseconds with up to three decimals, always with a decimal point (as Kineto)."""
    whole, frac = divmod(ns, 1000)
    text = f"{whole}.{frac:03d}".rstrip("0")
    return text + "0" if text.endswith(".") else text


class Us:
    """A time value serialized verbatim as a JSON number in microseconds."""

    def __init__(self, ns: int):
        self.ns = ns


def dump_json(value, out: io.StringIO) -> None:
    """Compact JSON writer that keeps Us values as exact decimal literals."""
    if isinstance(value, Us):
        out.write(fmt_us(value.ns))
    elif isinstance(value, dict):
        out.write("{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.write(", ")
            out.write(json.dumps(k))
            out.write(": ")
            dump_json(v, out)
        out.write("}")
    elif isinstance(value, list):
        out.write("[")
        for i, v in enumerate(value):
            if i:
                out.write(", ")
            dump_json(v, out)
        out.write("]")
    else:
        out.write(json.dumps(value))


# ---------------------------------------------------------------------------------------
# Simulation
# ---------------------------------------------------------------------------------------
class TraceBuilder:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.t = T0_NS + 180_000  # CPU clock (ns); the profiler starts a little earlier
        self.gpu_free = 0  # end of the last GPU activity on stream 7
        self.cpu_ops, self.python, self.annotations, self.gpu_annotations = [], [], [], []
        self.launch_records = []  # runtime call + flows + GPU event, in launch order
        self.next_external, self.next_corr, self.next_py = 1, 52_000, 1
        self.op_stack, self.py_stack = [], []
        self.module_index = {}  # module path -> (class, instance index)
        self.class_count = {}

    # -- clocks -------------------------------------------------------------------------
    def ns(self, us: float, spread: float = 0.1) -> int:
        return max(1, int(round(us * 1000 * (1 + self.rng.uniform(-spread, spread)))))

    def cpu(self, us: float, spread: float = 0.2) -> None:
        self.t += self.ns(us, spread)

    # -- host events --------------------------------------------------------------------
    @contextlib.contextmanager
    def frame(self, name: str, module_id: int | None = None):
        self.cpu(0.9)
        start = self.t
        args = {"Python parent id": self.py_stack[-1] if self.py_stack else None,
                "Python id": self.next_py}
        if module_id is not None:
            args["Python module id"] = module_id
        self.py_stack.append(self.next_py)
        self.next_py += 1
        event = {"ph": "X", "cat": "python_function", "name": name, "pid": CPU_PID,
                 "tid": CPU_PID, "ts": Us(start), "dur": None, "args": args}
        self.python.append(event)
        self.cpu(0.6)
        yield
        self.cpu(0.7)
        event["dur"] = Us(self.t - start)
        self.py_stack.pop()

    @contextlib.contextmanager
    def module(self, path: str, cls: str, forward: str):
        """An nn.Module call: module frame, _call_impl, then the module's forward frame."""
        if path not in self.module_index:
            n = self.class_count.get(cls, 0)
            self.class_count[cls] = n + 1
            self.module_index[path] = (cls, n)
        cls, n = self.module_index[path]
        with self.frame(f"nn.Module: {cls}_{n}", module_id=n):
            with self.frame("torch/nn/modules/module.py(1762): _call_impl"):
                with self.frame(forward):
                    yield

    @contextlib.contextmanager
    def op(self, name, dims, types, concrete, strides=None, host_us=2.0):
        """A cpu_op; `host_us` is dispatcher time spent before its children run."""
        self.cpu(0.5)
        start = self.t
        if strides is None:
            strides = [contiguous_strides(d) if d and isinstance(d[0], int) else [] for d in dims]
        args = {"External id": self.next_external, "Record function id": 0,
                "Concrete Inputs": concrete, "Input type": types, "Input Strides": strides,
                "Input Dims": dims}
        self.next_external += 1
        event = {"ph": "X", "cat": "cpu_op", "name": name, "pid": CPU_PID, "tid": CPU_PID,
                 "ts": Us(start), "dur": None, "args": args}
        self.cpu_ops.append(event)
        self.op_stack.append(event)
        self.cpu(host_us)
        yield
        self.cpu(0.8)
        event["dur"] = Us(self.t - start)
        self.op_stack.pop()

    def leaf(self, name, dims, types, concrete, strides=None, host_us=1.5):
        with self.op(name, dims, types, concrete, strides, host_us):
            pass

    # -- runtime + GPU ------------------------------------------------------------------
    def _runtime(self, name: str, cbid: int, us: float) -> dict:
        self.cpu(0.4)
        args = {"External id": self.op_stack[-1]["args"]["External id"]} if self.op_stack else {}
        args.update({"cbid": cbid, "correlation": self.next_corr})
        self.next_corr += 1
        event = {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": CPU_PID, "tid": CPU_PID,
                 "ts": Us(self.t), "dur": Us(self.ns(us, 0.25)), "args": args}
        return event

    def _enqueue(self, runtime: dict, gpu_us: float) -> tuple[int, int]:
        """GPU start/end of work launched by `runtime`: after submission latency and the
        previous activity on the stream."""
        submitted = runtime["ts"].ns + runtime["dur"].ns + self.ns(2.2, 0.3)
        start = max(submitted, self.gpu_free + self.ns(1.1, 0.4))
        end = start + self.ns(gpu_us, 0.03)
        self.gpu_free = end
        self.t = runtime["ts"].ns + runtime["dur"].ns
        return start, end

    def _flows(self, runtime: dict, gpu_event: dict) -> list[dict]:
        corr = runtime["args"]["correlation"]
        start = {"ph": "s", "id": corr, "pid": CPU_PID, "tid": CPU_PID, "ts": runtime["ts"],
                 "cat": "ac2g", "name": "ac2g"}
        end = {"ph": "f", "id": corr, "pid": GPU_PID, "tid": STREAM, "ts": gpu_event["ts"],
               "cat": "ac2g", "name": "ac2g", "bp": "e"}
        return [runtime, start, gpu_event, end]

    def kernel(self, name, gpu_us, grid, block, regs=32, smem=0, api="cudaLaunchKernel"):
        runtime = self._runtime(api, 211 if api == "cudaLaunchKernel" else 430,
                                4.6 if api == "cudaLaunchKernel" else 6.2)
        start, end = self._enqueue(runtime, gpu_us)
        blocks = grid[0] * grid[1] * grid[2]
        threads = block[0] * block[1] * block[2]
        per_sm = blocks / NUM_SMS
        warps = per_sm * threads / 32
        args = {"External id": runtime["args"]["External id"], "queued": 0, "device": 0,
                "context": 1, "stream": STREAM, "correlation": runtime["args"]["correlation"],
                "registers per thread": regs, "shared memory": smem,
                "blocks per SM": round(per_sm, 6), "warps per SM": round(warps, 6),
                "grid": grid, "block": block,
                "est. achieved occupancy %": min(100, int(warps / 64 * 100))}
        gpu = {"ph": "X", "cat": "kernel", "name": name, "pid": GPU_PID, "tid": STREAM,
               "ts": Us(start), "dur": Us(end - start), "args": args}
        self.launch_records.append(self._flows(runtime, gpu))

    def transfer(self, cat, name, api, cbid, nbytes, gpu_us):
        runtime = self._runtime(api, cbid, 7.5 if cat == "gpu_memcpy" else 3.4)
        start, end = self._enqueue(runtime, gpu_us)
        args = {"External id": runtime["args"]["External id"], "device": 0, "context": 1,
                "stream": STREAM, "correlation": runtime["args"]["correlation"],
                "bytes": nbytes, "memory bandwidth (GB/s)": nbytes / (end - start)}
        gpu = {"ph": "X", "cat": cat, "name": name, "pid": GPU_PID, "tid": STREAM,
               "ts": Us(start), "dur": Us(end - start), "args": args}
        self.launch_records.append(self._flows(runtime, gpu))

    def host_only_call(self, name, cbid, us):
        """A runtime call without GPU work: Kineto writes a lone flow end on the CPU thread."""
        runtime = self._runtime(name, cbid, us)
        end = {"ph": "f", "id": runtime["args"]["correlation"], "pid": CPU_PID, "tid": CPU_PID,
               "ts": runtime["ts"], "cat": "ac2g", "name": "ac2g", "bp": "e"}
        self.launch_records.append([runtime, end])
        self.t = runtime["ts"].ns + runtime["dur"].ns

    def stream_synchronize(self):
        """cudaStreamSynchronize blocks the host until the stream drains; it has a flow
        start but no GPU event."""
        runtime = self._runtime("cudaStreamSynchronize", 131, 1.0)
        finish = max(runtime["ts"].ns + runtime["dur"].ns, self.gpu_free + self.ns(3.0))
        runtime["dur"] = Us(finish - runtime["ts"].ns)
        start = {"ph": "s", "id": runtime["args"]["correlation"], "pid": CPU_PID,
                 "tid": CPU_PID, "ts": runtime["ts"], "cat": "ac2g", "name": "ac2g"}
        self.launch_records.append([runtime, start])
        self.t = finish


def gemm_us(m, n, k, eff):
    flops = 2 * m * n * k
    nbytes = (m * k + k * n + m * n) * BF16
    return max(flops / (eff * PEAK_TFLOPS * 1e12), nbytes / (0.8 * PEAK_TBPS * 1e12)) * 1e6 + 2.5


def mem_us(nbytes, eff):
    return nbytes / (eff * PEAK_TBPS * 1e12) * 1e6 + 1.8


BF = "c10::BFloat16"


# ---------------------------------------------------------------------------------------
# The model, op by op
# ---------------------------------------------------------------------------------------
class Model:
    def __init__(self, tb: TraceBuilder):
        self.tb = tb
        self.first_gemm_in_step = True

    def gemm_launch(self, m, n, k, eff):
        tb = self.tb
        if self.first_gemm_in_step:  # cuBLAS clears its workspace on first use in the step
            tb.transfer("gpu_memset", "Memset (Device)", "cudaMemsetAsync", 51, 4, 0.9)
            self.first_gemm_in_step = False
        if n >= 16384:
            name, tile, block, regs, smem = K_GEMM_128x256, (128, 256), [384, 1, 1], 168, 230400
        elif m * n <= 1024 * 1024 * 4:
            name, tile, block, regs, smem = K_GEMM_64x128, (64, 128), [256, 1, 1], 168, 164864
        else:
            name, tile, block, regs, smem = K_GEMM_128x128, (128, 128), [384, 1, 1], 168, 231424
        grid = [-(-n // tile[1]), -(-m // tile[0]), 1]
        tb.kernel(name, gemm_us(m, n, k, eff), grid, block, regs, smem, "cudaLaunchKernelExC")

    def transpose_weight(self, out_f, in_f):
        tb = self.tb
        with tb.op("aten::t", [[out_f, in_f]], [BF], [""], host_us=1.2):
            with tb.op("aten::transpose", [[out_f, in_f], [], []], [BF, "Scalar", "Scalar"],
                       ["", "0", "1"], host_us=0.8):
                tb.leaf("aten::as_strided", [[out_f, in_f], [], [], []],
                        [BF, "ScalarList", "ScalarList", "Scalar"],
                        ["", f"[{in_f}, {out_f}]", f"[1, {in_f}]", "0"], host_us=0.5)

    def linear(self, path, x_dims, out_f, eff, bias=False, forward_line=125):
        """nn.Linear on a 3-d input: addmm when there is a bias, matmul -> mm otherwise."""
        tb = self.tb
        in_f = x_dims[-1]
        m = x_dims[0] * x_dims[1]
        out_dims = x_dims[:-1] + [out_f]
        with tb.module(path, "Linear", f"torch/nn/modules/linear.py({forward_line}): forward"):
            with tb.frame("<built-in function linear>"):
                dims = [x_dims, [out_f, in_f], [out_f] if bias else []]
                types = [BF, BF, BF if bias else ""]
                with tb.op("aten::linear", dims, types, ["", "", ""], host_us=1.6):
                    self.transpose_weight(out_f, in_f)
                    if bias:
                        tb.leaf("aten::view", [x_dims, []], [BF, "ScalarList"],
                                ["", f"[{m}, {in_f}]"])
                        with tb.op("aten::addmm", [[out_f], [m, in_f], [in_f, out_f], [], []],
                                   [BF, BF, BF, "Scalar", "Scalar"], ["", "", "", "1", "1"],
                                   strides=[[1], [in_f, 1], [1, in_f], [], []], host_us=9.0):
                            self.gemm_launch(m, out_f, in_f, eff)
                        tb.leaf("aten::view", [[m, out_f], []], [BF, "ScalarList"],
                                ["", str(out_dims)])
                    else:
                        with tb.op("aten::matmul", [x_dims, [in_f, out_f]], [BF, BF], ["", ""],
                                   strides=[contiguous_strides(x_dims), [1, in_f]], host_us=1.4):
                            with tb.op("aten::reshape", [x_dims, []], [BF, "ScalarList"],
                                       ["", f"[{m}, {in_f}]"], host_us=0.7):
                                tb.leaf("aten::view", [x_dims, []], [BF, "ScalarList"],
                                        ["", f"[{m}, {in_f}]"], host_us=0.4)
                            with tb.op("aten::mm", [[m, in_f], [in_f, out_f]], [BF, BF], ["", ""],
                                       strides=[[in_f, 1], [1, in_f]], host_us=9.0):
                                self.gemm_launch(m, out_f, in_f, eff)
                            tb.leaf("aten::_unsafe_view", [[m, out_f], []], [BF, "ScalarList"],
                                    ["", str(out_dims)], host_us=1.2)

    def layer_norm(self, path):
        tb = self.tb
        x = [BATCH, SEQ, D_MODEL]
        with tb.module(path, "LayerNorm", "torch/nn/modules/normalization.py(217): forward"):
            with tb.frame("torch/nn/functional.py(2910): layer_norm"):
                with tb.frame("<built-in method layer_norm of type object at 0x7f3a51c2e8a0>"):
                    dims = [x, [], [D_MODEL], [D_MODEL], [], []]
                    types = [BF, "ScalarList", BF, BF, "Scalar", "Scalar"]
                    concrete = ["", f"[{D_MODEL}]", "", "", "1.0000000000000001e-05", "True"]
                    with tb.op("aten::layer_norm", dims, types, concrete, host_us=1.8):
                        with tb.op("aten::native_layer_norm", dims[:5], types[:5], concrete[:5],
                                   host_us=3.5):
                            tb.leaf("aten::empty_like", [x, [], [], [], [], []],
                                    [BF, "", "", "", "", ""], ["", "", "", "", "", ""], host_us=1.1)
                            nbytes = 2 * TOKENS * D_MODEL * BF16 + 2 * TOKENS * FP32
                            tb.kernel(K_LAYER_NORM, mem_us(nbytes, 0.62), [TOKENS, 1, 1],
                                      [32, 4, 1], regs=34, smem=24)

    def contiguous(self, dims, strides):
        tb = self.tb
        with tb.frame("<built-in method contiguous of Tensor object at 0x7f3a2c1b7d30>"):
            with tb.op("aten::contiguous", [dims, []], [BF, "Scalar"], ["", "0"],
                       strides=[strides, []], host_us=1.0):
                with tb.op("aten::clone", [dims, []], [BF, "Scalar"], ["", "0"],
                           strides=[strides, []], host_us=1.2):
                    tb.leaf("aten::empty_like", [dims, [], [], [], [], []],
                            [BF, "", "", "", "", "Scalar"], ["", "", "", "", "", "0"],
                            strides=[strides, [], [], [], [], []], host_us=1.0)
                    with tb.op("aten::copy_", [dims, dims, []], [BF, BF, "Scalar"],
                               ["", "", "False"],
                               strides=[contiguous_strides(dims), strides, []], host_us=3.0):
                        n = 1
                        for d in dims:
                            n *= d
                        tb.kernel(K_STRIDED_COPY, mem_us(2 * n * BF16, 0.42),
                                  [-(-n // 512), 1, 1], [128, 1, 1], regs=28)

    def attention(self, layer):
        tb = self.tb
        x = [BATCH, SEQ, D_MODEL]
        path = f"layers.{layer}.attn"
        with tb.module(path, "Attention", "tinylm/model.py(58): forward"):
            self.linear(f"{path}.qkv", x, 3 * D_MODEL, eff=0.61, bias=True)
            split = [BATCH, SEQ, 3, HEADS, HEAD_DIM]
            tb.leaf("aten::view", [x[:2] + [3 * D_MODEL], []], [BF, "ScalarList"],
                    ["", str(split)])
            heads = [3, BATCH, HEADS, SEQ, HEAD_DIM]
            split_strides = contiguous_strides(split)
            perm = [split_strides[i] for i in (2, 0, 3, 1, 4)]
            tb.leaf("aten::permute", [split, []], [BF, "ScalarList"], ["", "[2, 0, 3, 1, 4]"],
                    strides=[split_strides, []])
            with tb.op("aten::unbind", [heads, []], [BF, "Scalar"], ["", "0"],
                       strides=[perm, []], host_us=1.5):
                for _ in range(3):
                    with tb.op("aten::select", [heads, [], []], [BF, "Scalar", "Scalar"],
                               ["", "0", "0"], strides=[perm, [], []], host_us=0.6):
                        tb.leaf("aten::as_strided", [heads, [], [], []],
                                [BF, "ScalarList", "ScalarList", "Scalar"],
                                ["", str(heads[1:]), str(perm[1:]), "0"],
                                strides=[perm, [], [], []], host_us=0.4)
            q = [BATCH, HEADS, SEQ, HEAD_DIM]
            # The model makes q/k/v contiguous before attention although flash attention
            # accepts these strides: three avoidable copies per layer.
            for _ in range(3):
                self.contiguous(q, perm[1:])
            with tb.frame("<built-in function scaled_dot_product_attention>"):
                dims = [q, q, q, [], [], [], [], []]
                types = [BF, BF, BF, "", "Scalar", "Scalar", "", "Scalar"]
                with tb.op("aten::scaled_dot_product_attention", dims, types,
                           ["", "", "", "", "0.", "True", "", "False"], host_us=3.0):
                    fdims = [q, q, q, [], [], [], []]
                    with tb.op("aten::_scaled_dot_product_flash_attention", fdims,
                               [BF, BF, BF, "Scalar", "Scalar", "Scalar", ""],
                               ["", "", "", "0.", "True", "False", ""], host_us=2.5):
                        bshd = [BATCH, SEQ, HEADS, HEAD_DIM]
                        bshd_strides = [SEQ * HEADS * HEAD_DIM, HEAD_DIM, SEQ * HEAD_DIM, 1]
                        for _ in range(3):
                            tb.leaf("aten::transpose", [q, [], []], [BF, "Scalar", "Scalar"],
                                    ["", "1", "2"], host_us=0.7)
                        adims = [bshd, bshd, bshd] + [[]] * 12
                        atypes = [BF, BF, BF, "", "", "Scalar", "Scalar", "Scalar", "Scalar",
                                  "Scalar", "Scalar", "", "", "", ""]
                        aconcrete = ["", "", "", "", "", str(SEQ), str(SEQ), "0.", "True",
                                     "False", "0.125", "", "", "", ""]
                        with tb.op("aten::_flash_attention_forward", adims, atypes, aconcrete,
                                   strides=[bshd_strides] * 3 + [[]] * 12, host_us=4.0):
                            tb.leaf("aten::empty_like", [bshd, [], [], [], [], []],
                                    [BF, "", "", "", "", ""], ["", "", "", "", "", ""],
                                    strides=[bshd_strides, [], [], [], [], []], host_us=1.2)
                            tb.leaf("aten::empty", [[], [], [], [], [], []],
                                    ["ScalarList", "Scalar", "Scalar", "", "", ""],
                                    [f"[{BATCH}, {HEADS}, {SEQ}]", "6", "0", "", "", ""],
                                    host_us=1.0)
                            tb.host_only_call("cudaFuncSetAttribute", 15, 0.9)
                            flops = 4 * BATCH * HEADS * SEQ * SEQ * HEAD_DIM // 2  # causal
                            tb.kernel(K_FLASH, flops / (0.36 * PEAK_TFLOPS * 1e12) * 1e6 + 3.0,
                                      [SEQ // 128, BATCH, HEADS], [128, 1, 1], regs=255,
                                      smem=49152)
                        tb.leaf("aten::transpose", [bshd, [], []], [BF, "Scalar", "Scalar"],
                                ["", "1", "2"], strides=[contiguous_strides(bshd), [], []],
                                host_us=0.7)
            out_strides = [SEQ * HEADS * HEAD_DIM, HEAD_DIM, HEADS * HEAD_DIM, 1]
            tb.leaf("aten::transpose", [q, [], []], [BF, "Scalar", "Scalar"], ["", "1", "2"],
                    strides=[out_strides, [], []], host_us=0.7)
            with tb.op("aten::reshape", [[BATCH, SEQ, HEADS, HEAD_DIM], []], [BF, "ScalarList"],
                       ["", str(x)], host_us=0.8):
                tb.leaf("aten::view", [[BATCH, SEQ, HEADS, HEAD_DIM], []], [BF, "ScalarList"],
                        ["", str(x)], host_us=0.4)
            self.linear(f"{path}.out", x, D_MODEL, eff=0.52)

    def residual_add(self):
        tb = self.tb
        x = [BATCH, SEQ, D_MODEL]
        with tb.op("aten::add", [x, x, []], [BF, BF, "Scalar"], ["", "", "1"], host_us=3.2):
            n = TOKENS * D_MODEL
            tb.kernel(K_ADD, mem_us(3 * n * BF16, 0.8), [-(-n // 512), 1, 1], [128, 1, 1],
                      regs=24)

    def mlp(self, layer):
        tb = self.tb
        x = [BATCH, SEQ, D_MODEL]
        h = [BATCH, SEQ, FF]
        n = TOKENS * FF
        path = f"layers.{layer}.mlp"
        with tb.module(path, "GatedMLP", "tinylm/model.py(31): forward"):
            self.linear(f"{path}.gate", x, FF, eff=0.66)
            self.linear(f"{path}.up", x, FF, eff=0.66)
            with tb.module(f"{path}.act", "SiLU", "torch/nn/modules/activation.py(432): forward"):
                with tb.frame("torch/nn/functional.py(2380): silu"):
                    with tb.frame("<built-in method silu of type object at 0x7f3a51c2e8a0>"):
                        with tb.op("aten::silu", [h], [BF], [""], host_us=3.0):
                            tb.kernel(K_SILU, mem_us(2 * n * BF16, 0.83), [-(-n // 512), 1, 1],
                                      [128, 1, 1], regs=24)
            with tb.op("aten::mul", [h, h], [BF, BF], ["", ""], host_us=3.0):
                tb.kernel(K_MUL, mem_us(3 * n * BF16, 0.86), [-(-n // 512), 1, 1], [128, 1, 1],
                          regs=24)
            self.linear(f"{path}.down", h, D_MODEL, eff=0.58)

    def decoder_layer(self, layer):
        with self.tb.module(f"layers.{layer}", "DecoderLayer", "tinylm/model.py(84): forward"):
            self.layer_norm(f"layers.{layer}.ln1")
            self.attention(layer)
            self.residual_add()
            self.layer_norm(f"layers.{layer}.ln2")
            self.mlp(layer)
            self.residual_add()

    def embedding(self):
        tb = self.tb
        ids = [BATCH, SEQ]
        with tb.module("embed", "Embedding", "torch/nn/modules/sparse.py(190): forward"):
            with tb.frame("torch/nn/functional.py(2551): embedding"):
                with tb.frame("<built-in method embedding of type object at 0x7f3a51c2e8a0>"):
                    with tb.op("aten::embedding", [[VOCAB, D_MODEL], ids, [], [], []],
                               [BF, "long int", "Scalar", "Scalar", "Scalar"],
                               ["", "", "-1", "False", "False"], host_us=2.0):
                        with tb.op("aten::reshape", [ids, []], ["long int", "ScalarList"],
                                   ["", "[-1]"], host_us=0.8):
                            tb.leaf("aten::view", [ids, []], ["long int", "ScalarList"],
                                    ["", "[-1]"], host_us=0.4)
                        with tb.op("aten::index_select", [[VOCAB, D_MODEL], [], [TOKENS]],
                                   [BF, "Scalar", "long int"], ["", "0", ""], host_us=3.0):
                            nbytes = 2 * TOKENS * D_MODEL * BF16 + TOKENS * I64
                            tb.kernel(K_INDEX_SELECT, mem_us(nbytes, 0.55), [1024, 1, 1],
                                      [128, 1, 1], regs=32)
                        tb.leaf("aten::view", [[TOKENS, D_MODEL], []], [BF, "ScalarList"],
                                ["", f"[{BATCH}, {SEQ}, {D_MODEL}]"], host_us=0.6)

    def to_device(self, dims, dtype, direction):
        """`tensor.to(...)`: _to_copy -> empty_strided + copy_ -> cudaMemcpyAsync."""
        tb = self.tb
        n = 1
        for d in dims:
            n *= d
        with tb.op("aten::to", [dims, [], [], [], [], []],
                   [dtype, "", "", "", "Scalar", "Scalar"],
                   ["", "", "", "", "True" if direction == "h2d" else "False", "False"],
                   host_us=1.5):
            with tb.op("aten::_to_copy", [dims, [], [], [], [], [], []],
                       [dtype, "", "", "", "", "Scalar", ""],
                       ["", "", "", "", "", "True" if direction == "h2d" else "False", ""],
                       host_us=2.0):
                tb.leaf("aten::empty_strided", [[], [], [], [], [], []],
                        ["ScalarList", "ScalarList", "Scalar", "Scalar", "", "Scalar"],
                        [str(dims), str(contiguous_strides(dims)), "4", "0", "",
                         "True" if direction == "h2d" else "False"], host_us=2.5)
                with tb.op("aten::copy_", [dims, dims, []], [dtype, dtype, "Scalar"],
                           ["", "", "True" if direction == "h2d" else "False"], host_us=3.5):
                    if direction == "h2d":
                        tb.transfer("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)",
                                    "cudaMemcpyAsync", 41, n * I64, 2.3)
                    else:
                        tb.transfer("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)",
                                    "cudaMemcpyAsync", 41, n * I64, 1.6)
                        tb.stream_synchronize()

    def logits_to_float(self):
        tb = self.tb
        dims = [BATCH, SEQ, VOCAB]
        n = TOKENS * VOCAB
        with tb.frame("<built-in method float of Tensor object at 0x7f3a2c1b7e90>"):
            with tb.op("aten::to", [dims, [], [], [], []], [BF, "Scalar", "Scalar", "Scalar", ""],
                       ["", "6", "False", "False", ""], host_us=1.5):
                with tb.op("aten::_to_copy", [dims, [], [], [], [], [], []],
                           [BF, "Scalar", "", "", "", "Scalar", ""],
                           ["", "6", "", "", "", "False", ""], host_us=2.0):
                    tb.leaf("aten::empty_strided", [[], [], [], [], [], []],
                            ["ScalarList", "ScalarList", "Scalar", "Scalar", "", ""],
                            [str(dims), str(contiguous_strides(dims)), "6", "0", "", ""],
                            host_us=2.5)
                    with tb.op("aten::copy_", [dims, dims, []], ["float", BF, "Scalar"],
                               ["", "", "False"], host_us=3.0):
                        tb.kernel(K_CAST_COPY, mem_us(n * (BF16 + FP32), 0.81),
                                  [-(-n // 512), 1, 1], [128, 1, 1], regs=32)

    def next_token(self):
        tb = self.tb
        full = [BATCH, SEQ, VOCAB]
        last = [BATCH, VOCAB]
        with tb.op("aten::select", [full, [], []], ["float", "Scalar", "Scalar"],
                   ["", "1", "-1"], host_us=1.0):
            tb.leaf("aten::as_strided", [full, [], [], []],
                    ["float", "ScalarList", "ScalarList", "Scalar"],
                    ["", str(last), f"[{SEQ * VOCAB}, 1]", str((SEQ - 1) * VOCAB)],
                    host_us=0.5)
        with tb.op("aten::argmax", [last, [], []], ["float", "Scalar", "Scalar"],
                   ["", "-1", "False"], strides=[[SEQ * VOCAB, 1], [], []], host_us=4.0):
            tb.kernel(K_ARGMAX, mem_us(BATCH * VOCAB * FP32, 0.15), [BATCH, 1, 1], [32, 16, 1],
                      regs=40, smem=16)
        self.to_device([BATCH], "long int", "d2h")

    def step(self, step_no):
        tb = self.tb
        self.first_gemm_in_step = True
        annotation = {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step_no}",
                      "pid": CPU_PID, "tid": CPU_PID, "ts": Us(tb.t), "dur": None,
                      "args": {"External id": tb.next_external, "Record function id": 0}}
        tb.next_external += 1
        tb.annotations.append(annotation)
        gpu_first = len(tb.launch_records)
        with tb.frame("tinylm/serve.py(47): run_batch"):
            with tb.frame("tinylm/data.py(22): next_batch"):
                # Host-side batch preparation: the GPU has nothing to do meanwhile.
                with tb.frame("<built-in method randint of type object at 0x7f3a51c2e8a0>"):
                    tb.leaf("aten::randint", [[], [], [], [], [], [], []],
                            ["Scalar", "ScalarList", "Scalar", "", "", "", ""],
                            [str(VOCAB), f"[{BATCH}, {SEQ}]", "4", "", "", "", ""], host_us=38.0)
                tb.cpu(140.0)
                with tb.frame("<built-in method pin_memory of Tensor object at 0x7f3a2c1b7f10>"):
                    with tb.op("aten::pin_memory", [[BATCH, SEQ], []], ["long int", ""], ["", ""],
                               host_us=6.0):
                        tb.leaf("aten::_pin_memory", [[BATCH, SEQ], []], ["long int", ""],
                                ["", ""], host_us=21.0)
            with tb.frame("<built-in method to of Tensor object at 0x7f3a2c1b8030>"):
                self.to_device([BATCH, SEQ], "long int", "h2d")
            with tb.module("model", "TinyLM", "tinylm/model.py(112): forward"):
                self.embedding()
                for layer in range(LAYERS):
                    self.decoder_layer(layer)
                self.layer_norm("norm")
                self.linear("lm_head", [BATCH, SEQ, D_MODEL], VOCAB, eff=0.71)
            self.logits_to_float()
            self.next_token()
        tb.cpu(12.0)
        annotation["dur"] = Us(tb.t - annotation["ts"].ns)
        gpu_events = [rec[2] for rec in tb.launch_records[gpu_first:] if len(rec) == 4]
        g0 = gpu_events[0]["ts"].ns
        g1 = max(e["ts"].ns + e["dur"].ns for e in gpu_events)
        tb.gpu_annotations.append({
            "ph": "X", "cat": "gpu_user_annotation", "name": annotation["name"], "pid": GPU_PID,
            "tid": STREAM, "ts": Us(g0), "dur": Us(g1 - g0),
            "args": {"External id": annotation["args"]["External id"]}})


def metadata_events(ts_ns: int) -> list[dict]:
    events = []

    def meta(name, pid, tid, args):
        events.append({"name": name, "ph": "M", "ts": Us(ts_ns), "pid": pid, "tid": tid,
                       "args": args})

    meta("process_name", CPU_PID, 0, {"name": "python3"})
    meta("process_labels", CPU_PID, 0, {"labels": "CPU"})
    meta("process_sort_index", CPU_PID, 0, {"sort_index": CPU_PID})
    for gpu in range(8):  # the profiler names every visible device, used or not
        meta("process_name", gpu, 0, {"name": "python3"})
        meta("process_labels", gpu, 0, {"labels": f"GPU {gpu}"})
        meta("process_sort_index", gpu, 0, {"sort_index": 5000000 + gpu})
    meta("thread_name", GPU_PID, STREAM, {"name": f"stream {STREAM} "})
    meta("thread_sort_index", GPU_PID, STREAM, {"sort_index": STREAM})
    meta("thread_name", CPU_PID, CPU_PID, {"name": f"thread {CPU_PID} (python3)"})
    meta("thread_sort_index", CPU_PID, CPU_PID, {"sort_index": CPU_PID})
    return events


def build(seed: int) -> dict:
    tb = TraceBuilder(seed)
    model = Model(tb)
    with tb.frame("tinylm/serve.py(1): <module>"):
        with tb.frame("tinylm/serve.py(88): main"):
            for step_no in range(1, STEPS + 1):
                with tb.frame("torch/profiler/profiler.py(821): step"):
                    tb.cpu(35.0)
                model.step(step_no)
    end_ns = max(tb.t, tb.gpu_free) + 50_000

    events = list(tb.annotations)
    events += sorted(tb.cpu_ops, key=lambda e: e["ts"].ns)
    events += sorted(tb.python, key=lambda e: e["ts"].ns)
    for i, e in enumerate(events):  # the profiler's own event index on host events
        e["args"]["Ev Idx"] = i
    for record in tb.launch_records:
        events += record
    events += tb.gpu_annotations
    events += metadata_events(T0_NS)
    events.append({"ph": "X", "cat": "Trace", "ts": Us(T0_NS), "dur": Us(end_ns - T0_NS),
                   "pid": "Spans", "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)",
                   "args": {"Op count": 0}})
    events.append({"name": "process_sort_index", "ph": "M", "ts": Us(T0_NS), "pid": "Spans",
                   "tid": 0, "args": {"sort_index": 536870912}})
    events.append({"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g",
                   "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": Us(T0_NS)})
    events.append({"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "",
                   "ts": Us(end_ns)})

    rng = random.Random(seed + 1)
    return {
        "schemaVersion": 1,
        "deviceProperties": DEVICE_PROPERTIES,
        "cupti_version": 24,
        "cuda_runtime_version": 12060,
        "cuda_driver_version": 12080,
        "record_shapes": 1,
        "with_stack": 1,
        "with_modules": 1,
        "trace_id": "".join(rng.choice("0123456789ABCDEF") for _ in range(32)),
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1712292000000000000,
        "traceEvents": events,
        "traceName": "example_trace.json",
    }


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(here, "example_trace.json.gz"))
    parser.add_argument("--seed", type=int, default=20240405)
    args = parser.parse_args()

    text = io.StringIO()
    dump_json(build(args.seed), text)
    raw = text.getvalue().encode("utf-8")
    tmp = args.out + ".tmp"
    with open(tmp, "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=9) as gz:
            gz.write(raw)
    os.replace(tmp, args.out)
    print(f"wrote {args.out}: {os.path.getsize(args.out)} bytes ({len(raw)} uncompressed)")


if __name__ == "__main__":
    main()
