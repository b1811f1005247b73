// Activation checkpointing, seen from the trace: forward ops (linear, layer
// norm, attention, activations) that run again on autograd's backward thread
// are the checkpointed layers' recomputation. It is a trade, not a mistake:
// the finding states both sides, the recompute's kernel time (what turning
// it off, or checkpointing fewer layers, saves per step) and the memory the
// trace shows (the peak allocated, which would grow by the activations the
// recompute avoids keeping).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "insights/rules_internal.h"
#include "trace/memory_events.h"

namespace jarvis::insights {
namespace {

// Composite forward ops a backward pass never calls itself (their backward
// nodes call mm / native_*_backward instead).
bool is_forward_only(std::string_view n) {
  static const std::set<std::string_view> kOps = {
      "aten::linear",     "aten::addmm",    "aten::layer_norm",
      "aten::embedding",  "aten::dropout",  "aten::scaled_dot_product_attention",
      "aten::gelu",       "aten::conv2d",   "aten::batch_norm",
      "aten::group_norm", "aten::rms_norm", "aten::silu",
  };
  return kOps.count(n) > 0;
}

// Threads on which autograd's engine runs backward nodes.
std::set<uint32_t> backward_threads(const InsightContext& c) {
  std::set<uint32_t> out;
  for (Uid u : detail::events_named(c, [](std::string_view name) {
         return name.starts_with("autograd::engine::evaluate_function");
       }))
    if (c.trace.events[u].cat == Cat::CpuOp) out.insert(c.trace.events[u].thread);
  return out;
}

}  // namespace

void rule_activation_recompute(const InsightContext& c, std::vector<Insight>& out) {
  const std::set<uint32_t> backward = backward_threads(c);
  if (backward.empty()) return;
  // Recomputation runs inside the first backward node that needs a
  // checkpointed tensor (NativeDropoutBackward0 under non-reentrant
  // checkpointing): its children are the recomputed forward block, then the
  // node's own backward op(s). The block is the children up to the last
  // forward-only op among them.
  std::vector<Uid> ops, kernels, children;
  std::map<std::string, size_t> by_name;
  const auto backward_op = [](std::string_view name) {
    return name.find("Backward") != std::string_view::npos && !name.starts_with("autograd::");
  };
  for (Uid u : detail::events_named(c, backward_op)) {
    const Event& e = c.trace.events[u];
    if (e.cat != Cat::CpuOp || !backward.count(e.thread)) continue;
    children.clear();
    for (Uid k : c.tree.children(u))
      if (c.trace.events[k].cat == Cat::CpuOp) children.push_back(k);
    std::sort(children.begin(), children.end(),
              [&](Uid a, Uid b) { return c.trace.events[a].ts() < c.trace.events[b].ts(); });
    size_t end = 0;
    for (size_t k = 0; k < children.size(); ++k)
      if (is_forward_only(c.trace.name(children[k]))) end = k + 1;
    for (size_t k = 0; k < end; ++k) {
      ops.push_back(children[k]);
      ++by_name[std::string(c.trace.name(children[k]))];
      for (Uid g : c.tree.gpu_events(children[k])) kernels.push_back(g);
    }
  }
  if (ops.empty()) return;
  std::sort(kernels.begin(), kernels.end());
  kernels.erase(std::unique(kernels.begin(), kernels.end()), kernels.end());
  double recompute_us = 0;
  for (Uid k : kernels)
    if (c.trace.events[k].has_dur()) recompute_us += c.trace.events[k].dur();
  if (recompute_us <= 0) return;
  int64_t peak_bytes = -1;
  for (const MemorySample& s : memory_samples(c.trace))
    if (s.device_type > 0)  // the GPU's allocator (0 is the CPU's)
      peak_bytes = std::max<int64_t>(peak_bytes, s.total_allocated);
  const double steps =
      c.step ? static_cast<double>(std::max<size_t>(1, c.step->measured.iterations.size())) : 1.0;
  Insight i = detail::op_insight(c, "activation_recompute", "other", ops, recompute_us);
  i.gain_upper_bound_us = recompute_us;
  if (c.step) {
    critical_path::Scenario off;
    off.select.gpu_uids = kernels;
    off.factor = 1e-6;  // no recompute
    i.step_saving_us = detail::step_saving_total_us(c, off);
    // The what_if tool's arguments that replay it: no recompute kernels.
    i.what_if = {{"kernel_uids", kernels}, {"factor", off.factor}};
  }
  const double saving = i.step_saving_us.value_or(recompute_us);
  i.severity = "low";  // a trade the user chose: context more than a fix
  std::string memory =
      peak_bytes > 0
          ? fmt::format("peak allocated {:.2f} GB with it (profile_memory)", peak_bytes / 1e9)
          : "the trace has no [memory] events to size the memory side (profile_memory=True)";
  i.title = fmt::format(
      "Activation checkpointing: {} forward ops recomputed in the backward pass, {:.2f} ms of "
      "kernels per step; turning it off saves ~{:.2f} ms per step and costs their activations' "
      "memory ({})",
      ops.size(), recompute_us / steps / 1e3, saving / steps / 1e3, memory);
  i.detail =
      "Forward ops run again on autograd's backward thread: the checkpointed layers' "
      "recomputation. It trades step time for memory; it pays only while memory is what "
      "limits the batch or the model.";
  nlohmann::json names = nlohmann::json::object();
  for (const auto& [name, n] : by_name) names[name] = n;
  i.evidence = {{"recomputed_ops", names},
                {"recompute_kernel_us_per_step", recompute_us / steps},
                {"peak_allocated_bytes", peak_bytes > 0 ? nlohmann::json(peak_bytes) : nullptr}};
  i.action_model =
      "Keep checkpointing only where memory requires it: checkpoint fewer layers (every other "
      "block), use selective checkpointing (recompute cheap ops, keep GEMM outputs), or turn "
      "it off when the peak leaves room (then raise the batch size instead).";
  i.action_kernel = "None: the recompute is the same kernels as the forward pass.";
  i.verify =
      "Re-run with and without it: the step time falls by about the recompute time and the "
      "peak allocated memory (torch.cuda.max_memory_allocated) rises.";
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
