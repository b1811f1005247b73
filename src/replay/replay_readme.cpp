// README.md of a replay package: written for a kernel team that has never
// seen the trace or jarvis.
#include <filesystem>

#include <fmt/format.h>

#include "replay/replay.h"

namespace jarvis::replay {
namespace {

constexpr const char* kHowToRun = R"MD(
## How to run

Requirements: Python 3 and PyTorch (a CUDA, ROCm or CPU build; nothing else).

```sh
unzip replay_package.zip && cd replay_package
python3 replay.py                      # every op, on the GPU when PyTorch sees one
python3 replay.py --device cpu         # force CPU
python3 replay.py --only aten::mm      # ops whose name contains the text
python3 replay.py --ids 0,2            # entries by id (first column of the table below)
python3 replay.py --warmup 20 --iters 200 --results-json results.json
```

Other options: `--no-dtype-fallback` (fail instead of retrying in float32),
`--tracelens-strict` (accept exactly what TraceLens's EventReplayer accepts),
`--emit-tracelens-ir FILE` (write the matched calls as a TraceLens
`event_replay_ir.json`, usable with TraceLens's `batched_replay.py`),
`--stop-on-error`. `python3 replay.py --help` lists them all.

ROCm builds of PyTorch expose AMD GPUs as `cuda` devices, so `--device cuda`
(or the default `auto`) covers both vendors.

## How to read the results

The runner prints one row per entry:

| column | meaning |
|---|---|
| `id` | entry id in `replay_ir.json` |
| `op`, `input shapes`, `dtype` | the recorded call |
| `count` | how many times the trace ran this exact call (same shapes, strides, dtypes, scalars) |
| `trace_us` | mean GPU time per call in the trace: busy time (union of kernel, memcpy and memset intervals) of everything the op launched, including kernels of nested ops |
| `replay_us` | GPU time per call of the replay, median over `--iters` samples: a batch of calls (about 2 ms of work) is captured in a CUDA/HIP graph and replayed between one pair of events, so launch overhead is not measured and a 2 µs kernel reads 2 µs. When capture fails, batched eager calls are timed (the `method` column says which). On CPU: wall time per call |
| `replay/trace` | ratio of the two; near 1 means the replay reproduces the trace's kernel time |
| `host_us` | launch-inclusive wall time per call of eager calls (what a Python loop pays) |
| `method` | `cuda-graph`, `batched-events` (capture failed), `cuda-graph, cold L2` (`--cold-cache`) or `cpu-wall` |
| `status` | `ok`, or `error` with the reason printed under the table |

`--results-json FILE` also gives per op the p10/p90 spread, the warm- and cold-cache times, and
with `--profile-kernels` the kernels the replay launched (from `torch.profiler`) and whether they
are the trace's (`kernel_names_match`): another kernel than the trace's is itself a finding (a
different library path on this stack).

Notes under the table say when the runner had to deviate from the recorded
call: a dtype the device does not support (run again in float32), an operator
missing from the installed PyTorch (attention is then computed with
`torch.nn.functional.scaled_dot_product_attention`, or on PyTorch < 2.0 with
the math formula `softmax(q @ k^T * scale) @ v`, which is not the fused kernel
of the trace), or no GPU (CPU run). Rows with such notes measure something
different from the trace; compare them with care.

`replay_ir.json` also lists, per entry, the kernels the op launched in the
trace (`kernels`) and the UIDs of its calls in the trace (`uids`), so the
replayed kernel can be matched with the one in the trace (e.g. with
`rocprof`/`nsys` on the replay).

## Caveats

- Tensors are random (standard normal for floating point, zeros for integer
  and bool tensors, so index tensors stay in range). Data-dependent kernels
  (masking, sparsity, indexing, early exits) may run faster or slower than in
  the trace.
- Each op runs alone with warm caches; in the model it ran between other ops,
  possibly overlapped with other streams or with communication.
- Library choices (GEMM algorithm selection, attention back end) depend on the
  PyTorch / ROCm / CUDA versions and the GPU; run on the same stack as the trace
  for a like-for-like comparison.
- The operator overload is chosen by matching the recorded argument types
  against the schemas of the installed PyTorch, first match wins (TraceLens's
  rule). Ops with tensor-list arguments (e.g. `aten::cat`) cannot be rebuilt:
  the profiler does not record the element dtypes.
- In-place ops (`aten::add_`, `aten::mul_`, ...) run repeatedly on the same
  tensors, so values can grow to inf/NaN over many iterations; this rarely
  changes the kernel time but matters for value-dependent kernels.
- CPU timings are for functional checking only; they are not comparable with
  GPU kernel times.
- Ops recorded with float32 inputs whose trace kernels compute in bf16/fp16 (autocast casts
  inside the op) are replayed under `torch.autocast` with that dtype; string arguments, which
  the profiler does not record (e.g. `aten::gelu`'s `approximate`), take the schema default.
  Both are said in the op's notes.
)MD";

std::string shapes_text(const PyValue& dims, const PyValue& types) {
  std::string out;
  for (size_t i = 0; i < dims.size() && i < types.size(); ++i) {
    if (!types[i].is_string()) continue;
    const std::string& t = types[i].s;
    if (t.empty() || t == "Scalar" || t == "ScalarList") continue;
    out += (out.empty() ? "" : ", ") + dims[i].repr_list();
  }
  return out;
}

std::string dtypes_text(const PyValue& types) {
  std::string out;
  for (const PyValue& t : types.list) {
    if (!t.is_string() || t.s.empty() || t.s == "Scalar" || t.s == "ScalarList") continue;
    std::string name = t.s.rfind("c10::", 0) == 0 ? t.s.substr(5) : t.s;
    if (out.find(name) == std::string::npos) out += (out.empty() ? "" : "/") + name;
  }
  return out;
}

std::string op_table(const ReplayPlan& plan) {
  std::string out =
      "| id | op | category | input shapes | dtype | count | trace GPU µs / call | replayable |\n"
      "|---|---|---|---|---|---|---|---|\n";
  for (const ReplayOp& op : plan.ops) {
    std::string time = op.gpu_time ? fmt::format("{:.2f}", op.gpu_time->mean) : "no GPU work";
    std::string status = op.not_replayable.empty() ? "yes" : "no: " + op.not_replayable;
    out += fmt::format("| {} | `{}` | {} | {} | {} | {} | {} | {} |\n", op.id, op.name,
                       op.category.empty() ? "-" : op.category,
                       shapes_text(op.input_dims, op.input_type), dtypes_text(op.input_type),
                       op.uids.size(), time, status);
  }
  return out;
}

// A regex that matches exactly the kernel's name up to its parameter list:
// anchored, with every regex metacharacter escaped.
std::string kernel_regex(const std::string& name) {
  std::string head = name.substr(0, name.find('('));
  std::string out = "^";
  for (char c : head) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// ncu / rocprofv3 command lines that profile exactly one entry's kernels.
std::string profiling_commands(const ReplayPlan& plan) {
  std::string out;
  for (const ReplayOp& op : plan.ops) {
    if (op.kernels.empty() || !op.not_replayable.empty()) continue;
    std::string alternatives;
    for (const std::string& k : op.kernels) {
      if (!alternatives.empty()) alternatives += '|';
      alternatives += kernel_regex(k);
    }
    out += fmt::format(
        "Entry {} (`{}`):\n\n```sh\n"
        "ncu --kernel-name-base demangled --kernel-name 'regex:{}' --launch-count 10 \\\n"
        "    --set full -o entry{} python3 replay.py --ids {} --no-graph --iters 5\n"
        "rocprofv3 --kernel-trace --stats --kernel-include-regex '{}' \\\n"
        "    --pmc SQ_WAVES SQ_BUSY_CU_CYCLES SQ_INSTS_VALU SQ_INSTS_MFMA -- "
        "python3 replay.py --ids {} --no-graph --iters 5\n```\n\n",
        op.id, op.name, alternatives, op.id, op.id, alternatives, op.id);
  }
  if (out.empty()) return "";
  return "\n## Profile the kernels further\n\n"
         "Nsight Compute (NVIDIA) and rocprofv3 (AMD) on exactly the kernels each entry launched "
         "in the trace (the regexes are anchored and escaped; `--no-graph` launches them "
         "eagerly):\n\n" +
         out;
}

std::string tracelens_notes(const ReplayPlan& plan) {
  std::string out;
  for (const ReplayOp& op : plan.ops)
    if (!op.tracelens_rejects.empty() && op.not_replayable.empty())
      out += fmt::format("- entry {} (`{}`): {}\n", op.id, op.name, op.tracelens_rejects);
  if (out.empty()) return "";
  return "\nEntries TraceLens's own EventReplayer would refuse (replayed here anyway):\n\n" + out;
}

}  // namespace

std::string readme_text(const Trace& trace, const ReplayPlan& plan) {
  std::string gpu = trace.gpu_name();
  std::string source = std::filesystem::path(trace.path).filename().string();
  std::string out = fmt::format(
      "# Op replay package\n\n"
      "Standalone reproducers for {} op signature(s) taken from the PyTorch profiler trace "
      "`{}` (platform {}, GPU {}). Selection: {}.\n\n"
      "No model code and no weights are included: each entry is an operator name plus the "
      "shapes, strides, dtypes and scalar arguments the profiler recorded. The runner "
      "rebuilds the call with random data and times it.\n\n"
      "## What is inside\n\n"
      "| file | content |\n|---|---|\n"
      "| `replay_ir.json` | one entry per unique op + signature: recorded `Input Dims`, "
      "`Input Strides`, `Input type`, `Concrete Inputs`, a typed decoding (`args`), "
      "occurrence `count`, GPU time measured in the trace (`trace_gpu_time_us`, µs), kernel "
      "names |\n"
      "| `replay.py` | the runner (needs only PyTorch) |\n"
      "| `README.md` | this file |\n\n"
      "## Ops\n\n{}{}",
      plan.ops.size(), source, platform_name(trace.platform), gpu.empty() ? "unknown" : gpu,
      plan.selection, op_table(plan), tracelens_notes(plan));
  return out + kHowToRun + profiling_commands(plan);
}

}  // namespace jarvis::replay
