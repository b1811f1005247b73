// The rules and the helpers they share. Adding a rule: one rule_<name>.cpp
// defining a function of this signature, and one line in insights.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "insights/insights.h"
#include "insights/kernel_name.h"
#include "trace/name_ids.h"

namespace jarvis::insights {

using RuleFn = void (*)(const InsightContext&, std::vector<Insight>&);

void rule_gemm_unaligned_dims(const InsightContext& c, std::vector<Insight>& out);
void rule_old_arch_kernel(const InsightContext& c, std::vector<Insight>& out);
void rule_autocast_dtype(const InsightContext& c, std::vector<Insight>& out);
void rule_tiny_gemm_batching(const InsightContext& c, std::vector<Insight>& out);
void rule_launch_bound(const InsightContext& c, std::vector<Insight>& out);
void rule_conv_layout_transposes(const InsightContext& c, std::vector<Insight>& out);
void rule_unfused_attention(const InsightContext& c, std::vector<Insight>& out);
void rule_elementwise_chain(const InsightContext& c, std::vector<Insight>& out);
void rule_bandwidth_baseline(const InsightContext& c, std::vector<Insight>& out);
void rule_foreach_optimizer(const InsightContext& c, std::vector<Insight>& out);
void rule_epilogue_fusion(const InsightContext& c, std::vector<Insight>& out);
void rule_fp32_cross_entropy(const InsightContext& c, std::vector<Insight>& out);
void rule_full_vocab_logits(const InsightContext& c, std::vector<Insight>& out);
void rule_unfused_rmsnorm(const InsightContext& c, std::vector<Insight>& out);
void rule_unfused_rope(const InsightContext& c, std::vector<Insight>& out);
void rule_kv_cache_cat(const InsightContext& c, std::vector<Insight>& out);
void rule_dtype_casts(const InsightContext& c, std::vector<Insight>& out);
void rule_attention_efficiency(const InsightContext& c, std::vector<Insight>& out);
void rule_capture_host_cost(const InsightContext& c, std::vector<Insight>& out);
void rule_gemm_shared_input(const InsightContext& c, std::vector<Insight>& out);
void rule_compiled_kernel_headroom(const InsightContext& c, std::vector<Insight>& out);
void rule_unfused_gelu(const InsightContext& c, std::vector<Insight>& out);
void rule_fp32_gemm_simt(const InsightContext& c, std::vector<Insight>& out);
void rule_host_sync(const InsightContext& c, std::vector<Insight>& out);
void rule_dataloader_main_process(const InsightContext& c, std::vector<Insight>& out);
void rule_activation_recompute(const InsightContext& c, std::vector<Insight>& out);
void rule_unrecorded_host_time(const InsightContext& c, std::vector<Insight>& out);

namespace detail {

// An fp32 GEMM kernel on CUDA cores (cuBLAS / CUTLASS `sgemm`, `*_ffma_*`),
// not TF32 or a lower precision on tensor cores.
bool is_fp32_simt_gemm_kernel(std::string_view name);

// A what-if on the step model's graph from its one base (graph.attached_base):
// the un-profiled prediction alone, one replay (no prediction on the
// profiled host). Needs c.step.
critical_path::WhatIfResult step_what_if(const InsightContext& c,
                                         const critical_path::Scenario& change);
// The same step before and after, removed_us and changes, without the path
// (critical_path::what_if_step: its `predicted` has the iterations' times,
// no bound_by, contributors or summary): for a caller that reads the step
// time only; StepDetail::Bounds: each predicted iteration's bound_by too.
// Needs c.step.
// removed_us is summed only when asked (RemovedUs::Sum; else NaN).
critical_path::WhatIfResult step_time_what_if(
    const InsightContext& c, const critical_path::Scenario& change,
    critical_path::StepDetail detail = critical_path::StepDetail::Times,
    const critical_path::BoundsWhen& bounds_when = {},
    critical_path::RemovedUs removed = critical_path::RemovedUs::Skip);

// The step model's what-if saving, summed over the iterations (0 without a
// step model or when the change saves nothing).
double step_saving_total_us(const InsightContext& c, const critical_path::Scenario& change);

// The step saving (a total over the iterations) the what-if named by a
// finding's what_if arguments (the what_if tool's, beside `traces`) replays
// on the un-profiled step; nullopt without a step model or when the
// arguments match nothing (what_if_replay.cpp).
std::optional<double> what_if_replay_total_us(const InsightContext& c, const nlohmann::json& args);
// Adds the changes a finding's what_if arguments name (the what_if tool's,
// beside `traces`) to `sc`: its GPU events at their factor as one more
// selection, its host removals, host gaps and CUDA graph. Throws as the
// what-if does when they match nothing. Needs c.step.
void add_what_if_args(const InsightContext& c, const nlohmann::json& args,
                      critical_path::Scenario& sc);
// Each host finding's step saving made the figure its what_if arguments
// replay: the finding and the what-if an agent runs say one number.
void replay_what_ifs(const InsightContext& c, std::vector<Insight>& insights);

// The span of the step model's iterations in the trace's own time (the
// graph's clock offset of its one rank taken out), and that rank; events
// outside it are set-up or tear-down, not steps. Needs c.step.
struct StepWindow {
  int64_t rank = -1;
  double from_us = 0, to_us = 0;
  bool contains(double trace_ts) const { return trace_ts >= from_us && trace_ts < to_us; }
};
StepWindow step_window(const InsightContext& c);

// The host syncs inside the step model's iterations (rule_host_sync.cpp's
// calls: a runtime synchronise, or a copy whose GPU side the call waited
// for), by the op a user wrote that made them (the outermost cpu_op above the
// call: aten::index above aten::nonzero) and the innermost (inner_op ""
// for a call outside any op: the script's own synchronize); most calls first.
// capture_blocking counts the calls a CUDA graph of the step cannot hold: a
// synchronise or a copy to the host, with GPU work launched in its step both
// before and after it (a sync at a step's end, or a copy to or within the
// device, leaves the launches around it capturable). Needs c.step.
struct HostSyncSite {
  std::string op, inner_op;
  size_t calls = 0;             // over all iterations
  size_t capture_blocking = 0;  // of them, mid-step syncs a graph capture cannot hold
};
std::vector<HostSyncSite> step_host_sync_sites(const InsightContext& c);

// The severity of a host-side finding by its what-if saving (a total over
// the iterations): high from 5 % of the step, medium when it saves anything.
std::string severity_by_step_saving(const InsightContext& c, double saving_total_us);

// The rate at which this trace streams memory: the fastest large elementwise
// op shape's bytes over its kernel time (what the GPU, its clocks and this
// software stack deliver), in TB/s, and that op's label; nullopt when no
// elementwise op is long enough to tell (rule_bandwidth_baseline.cpp).
struct BandwidthBaseline {
  double tbs = 0;
  std::string op;
};
std::optional<BandwidthBaseline> elementwise_bandwidth_baseline(const InsightContext& c);

// The batch-norm rows (indices into c.rows) that run NCHW kernels in a trace
// whose convolutions convert NCHW <-> NHWC around them: the model keeps NCHW
// tensors, and channels_last would give these norms their NHWC kernels too.
// Empty when the trace has no layout conversions (rule_conv_layout_transposes.cpp).
std::vector<size_t> nchw_batch_norm_rows(const InsightContext& c);

// GEMM dims of a modelled row (M, N, K, B), when the model has them.
struct GemmDims {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  std::string precision;  // of the recorded inputs: fp32, bf16, ...
  // The strides the trace records for A (M x K) and B (K x N), last two
  // dimensions; empty when the trace has none or the op's operands are not
  // laid out as M x K and K x N (only aten::mm, addmm, bmm, baddbmm and
  // _scaled_mm are read).
  std::vector<int64_t> stride_a, stride_b;
};
std::optional<GemmDims> gemm_dims(const report::PerfOpRow& row);
// The same for a row of c.rows, read once per trace (seven rules ask for
// every row's; each read looks params up by name and copies the strides):
// null when the row has none.
const GemmDims* gemm_dims(const InsightContext& c, const report::PerfOpRow& row);

// Kernel time above the roofline of a row (its recoverable time if it ran
// at the roof), or nullopt without a roofline.
std::optional<double> time_above_roofline(const report::PerfOpRow& row);

// Distinct kernel names of a row, in first-launch order.
std::vector<std::string> kernel_names(const Trace& trace, const report::PerfOpRow& row);

// "aten::mm (4096, 768) x (768, 50257)"-style label of a GEMM row.
std::string gemm_label(const report::PerfOpRow& row, const GemmDims& d);

double share_of(const InsightContext& c, double time_us);

// The severity of a finding by the share of all kernel time it is about (or
// could save): "high" from 5 %, "medium" from 1 %, else "low". One ladder
// for the rules, so a severity means the same whichever rule wrote it.
std::string severity_by_share(double share);

// An op-scope finding about `time_us` of kernel time spent in the ops `uids`:
// rule, scope, category, uids, time, share and severity_by_share(share)
// filled in; the rule adds the kernel names, its gain bound, words and
// evidence (and sets another severity where its rule ranks otherwise).
Insight op_insight(const InsightContext& c, std::string_view rule, std::string category,
                   std::vector<Uid> uids, double time_us);
// The recorded shape and dtype of an op's first input ("Input Dims"[0],
// "Input type"[0]); nullopt / "" when the trace has none.
std::optional<std::vector<int64_t>> first_input_dims(const Trace& t, Uid op);
std::string first_input_type(const Trace& t, Uid op);
// Element count of a shape (0 for a negative or absurd one).
int64_t elements(const std::vector<int64_t>& dims);
bool is_half_type(std::string_view recorded_type);  // c10::BFloat16 / c10::Half
// The perf rows holding any of `kernels` (sorted): a finding about those
// kernels names these rows, so that its claim shares their pools.
std::vector<Uid> rows_holding(const InsightContext& c, const std::vector<Uid>& sorted_kernels);

// An op-scope finding about a set of GPU kernels (`kernels` is sorted and
// made unique in place): op_insight over the perf rows holding them, with
// their distinct names. The rules that find their kernels through formula
// patterns (RMSNorm, RoPE, casts, the fp32 loss, the KV-cache cats) use it.
Insight kernels_insight(const InsightContext& c, std::string_view rule, std::string category,
                        std::vector<Uid>& kernels, double time_us);

// The ops at one level of a thread, in time order: a parent's cpu_op
// children, or the thread's root cpu_ops (an op under no other op; Python
// frames are not in the call tree, so a model's aten ops are roots there).
// Rules that read a formula written out op by op (RMSNorm, RoPE) walk these.
class Siblings {
 public:
  explicit Siblings(const InsightContext& c);
  // The level holding `op` (children lists are built into `scratch`, a
  // thread's roots are returned in place) and op's position in it (nullopt
  // when it is not there). Binary search by time: O(log n) per call on a
  // thread with a million root ops.
  struct Level {
    std::span<const Uid> ops;
    std::optional<size_t> at;
  };
  Level of(Uid op, std::vector<Uid>& scratch) const;
  std::pair<ProcId, ProcId> thread_of(Uid u) const;

 private:
  void sort_by_ts(std::vector<Uid>& v) const;
  // The context's trace and tree, not the context: the siblings are kept
  // among its facts (siblings(c)), which move with it.
  const Trace& trace_;
  const CallTree& tree_;
  std::map<std::pair<ProcId, ProcId>, std::vector<Uid>> roots_;
};

// The context's Siblings, made once (trace_facts.cpp) for the rules that
// read formulas op by op (four of them each sorted every thread's roots).
const Siblings& siblings(const InsightContext& c);

// Work and kernel time summed over rows: a FLOP-weighted rate.
struct FlopRate {
  double gflops = 0, time_us = 0;
  double tflops_per_s() const { return time_us > 0 ? gflops / time_us * 1e3 : 0; }
};

// The FLOP-weighted rate of this trace's GEMM rows of one compute spec that
// `keep` accepts: what the device, its clocks and its libraries deliver here,
// the reference the GEMM and attention rules time against (tflops_per_s()
// is 0 when no row qualifies).
FlopRate gemm_rate(const InsightContext& c, const std::string& spec,
                   const std::function<bool(const report::PerfOpRow&)>& keep);

// Every list of siblings in time order: each event's children (two or
// more), then each thread's top-level cpu_ops.
// The lists are the call tree's own (no copy per event).
void for_each_sibling_list(const InsightContext& c,
                           const std::function<void(std::span<const Uid>)>& visit);
// The same lists in the same order, each cut to its GPU-launching cpu_ops
// (those with GPU events), the lists of two or more of them, with each op's
// interned name beside it (names[k] = c.trace.events[uids[k]].name: read in
// order, not an event each): what the rules that read consecutive launching
// siblings (epilogue fusion, projections on one input) walk, made once per
// trace (trace_facts.h) instead of each rule walking every event's children
// (3.7 M at x256) for the few it reads.
void for_each_launching_sibling_list(
    const InsightContext& c,
    const std::function<void(std::span<const Uid> uids, std::span<const uint32_t> names)>& visit);

// The events whose name `keep` accepts, in UID order: what a scan of every
// event filtered by its name gives. `keep` is asked once per distinct name
// of an event, and the events come from an index of the trace's events by
// name made once per trace (trace_facts.h, make_events_by_name), not from a
// scan of all of them: a dozen rules scanned the 3.7 M events of an x256
// tile, 10-20 ms each, for the few they read.
std::vector<Uid> events_named(const InsightContext& c,
                              const std::function<bool(std::string_view)>& keep);
// The same for names given exactly.
std::vector<Uid> events_named(const InsightContext& c, std::span<const std::string_view> names);
inline std::vector<Uid> events_named(const InsightContext& c,
                                     std::initializer_list<std::string_view> names) {
  return events_named(c, std::span<const std::string_view>(names.begin(), names.size()));
}

// Calls a CUDA/HIP graph capture makes (*BeginCapture, *GetCaptureInfo,
// *GraphInstantiate*), 0 unless a capture begins or a graph is instantiated
// (PyTorch asks GetCaptureInfo in plain steps too). A trace holding them
// recorded the capture (each kernel enqueued once into a graph, the GPU idle
// while the host records), not a step that runs the graph.
size_t graph_capture_calls(const Trace& trace);

// The GPU idle time the host opened, by place name: idle_gaps' host_work
// gaps (the op after the gap was launched after the gap began) whole, and of
// the short launch_latency gaps the host opened the part before the launch.
std::map<std::string, double> host_work_idle_by_place(const InsightContext& c);

}  // namespace detail
}  // namespace jarvis::insights
