// Cross-entropy on fp32 logits in a bf16/fp16 (autocast) model. Autocast
// runs log_softmax / cross_entropy in fp32, and model code often calls
// logits.float() first, so a language model's [tokens, vocabulary] logits
// (GPT-2: 4096 x 50257, 823 MB in fp32) are cast up, run through
// log_softmax forward and backward in fp32 and cast back in the backward
// pass: four bandwidth-bound passes over the largest tensor of the step,
// reported as unrelated rows (a copy, a softmax, its backward, a copy).
// A fused, chunked cross-entropy on the half-precision logits reads them
// once: the casts go, and the softmax passes move half the bytes.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

// Logits worth naming: a vocabulary-sized last dimension, and enough of
// them to matter (4096 tokens x 4096 classes).
constexpr int64_t kMinClasses = 4096;
constexpr int64_t kMinElements = int64_t{1} << 24;
// The fused loss: casts gone, softmax passes on half the bytes.
constexpr double kSoftmaxTrafficSaved = 0.5;

// The trace's GEMMs run in half precision somewhere: autocast (or a
// half-precision model) is on, so fp32 logits are a choice, not the model.
std::string half_gemm_precision(const InsightContext& c) {
  for (const auto& row : c.rows)
    if (auto d = detail::gemm_dims(c, row); d && (d->precision == "bf16" || d->precision == "fp16"))
      return d->precision;
  return "";
}

// Sum of the GPU time of the outermost ops `pick` accepts (their subtrees'
// kernels, each counted once).
struct Pass {
  double us = 0;
  std::set<Uid> kernels, ops;
};

void add_subtree(const InsightContext& c, Uid op, Pass& p) {
  for (Uid k : c.tree.gpu_events(op))
    if (p.kernels.insert(k).second && c.trace.events[k].has_dur()) p.us += c.trace.events[k].dur();
  p.ops.insert(op);
}

}  // namespace

void rule_fp32_cross_entropy(const InsightContext& c, std::vector<Insight>& out) {
  const Trace& t = c.trace;
  const std::string half = half_gemm_precision(c);
  if (half.empty()) return;
  // The fp32 log_softmax of vocabulary-sized logits, outermost call only.
  std::map<int64_t, std::vector<int64_t>> logits;  // element count -> dims
  Pass forward, backward, casts;
  for (Uid u : detail::events_named(c, {"aten::log_softmax", "aten::_log_softmax"})) {
    const Event& e = t.events[u];
    if (e.cat != Cat::CpuOp) continue;
    const Uid parent = c.tree.parent(u);
    if (parent != kNoUid && t.name(parent).find("log_softmax") != std::string_view::npos) continue;
    auto dims = detail::first_input_dims(t, u);
    if (!dims || dims->empty() || detail::first_input_type(t, u) != "float") continue;
    const int64_t n = detail::elements(*dims);
    if (dims->back() < kMinClasses || n < kMinElements) continue;
    logits.emplace(n, *dims);
    add_subtree(c, u, forward);
  }
  if (logits.empty() || forward.us <= 0) return;
  for (Uid u : detail::events_named(c, {"LogSoftmaxBackward0", "aten::to", "aten::_to_copy"})) {
    const Event& e = t.events[u];
    if (e.cat != Cat::CpuOp) continue;
    const std::string_view name = t.name(u);
    if (name == "LogSoftmaxBackward0") {
      add_subtree(c, u, backward);
      continue;
    }
    // Casts (the other names asked) of a tensor of the logits' size between
    // half precision and fp32 (up in the forward pass, down in the
    // backward), outermost only.
    const Uid parent = c.tree.parent(u);
    if (parent != kNoUid && (t.name(parent) == "aten::to" || t.name(parent) == "aten::_to_copy"))
      continue;
    auto dims = detail::first_input_dims(t, u);
    const std::string type = detail::first_input_type(t, u);
    if (!dims || !logits.count(detail::elements(*dims)) ||
        (!detail::is_half_type(type) && type != "float"))
      continue;
    if (!c.tree.gpu_events(u).empty()) add_subtree(c, u, casts);
  }
  const double softmax_us = forward.us + backward.us;
  const double time_us = softmax_us + casts.us;
  std::vector<Uid> kernels;
  for (const Pass* p : {&forward, &backward, &casts})
    kernels.insert(kernels.end(), p->kernels.begin(), p->kernels.end());
  std::sort(kernels.begin(), kernels.end());
  // The finding's ops are the perf rows holding its kernels, so that its
  // claim shares their pools with the other rules'.
  std::vector<Uid> uids = detail::rows_holding(c, kernels);
  if (uids.empty()) uids.assign(forward.ops.begin(), forward.ops.end());
  Insight i = detail::op_insight(c, "fp32_cross_entropy", "loss", uids, time_us);
  const auto& dims = logits.rbegin()->second;
  const double fp32_mb = 4.0 * static_cast<double>(logits.rbegin()->first) / 1e6;
  std::set<std::string> names;
  for (Uid k : kernels) names.emplace(t.name(k));
  i.kernel_names.assign(names.begin(), names.end());
  i.gain_upper_bound_us = casts.us + kSoftmaxTrafficSaved * softmax_us;
  i.title = fmt::format(
      "Cross-entropy on fp32 logits [{}] ({:.0f} MB) in a {} model: casts (aten::to, "
      "ToCopyBackward0) {:.2f} ms, log_softmax forward {:.2f} ms and backward "
      "(LogSoftmaxBackward0) {:.2f} ms of kernel time",
      fmt::join(dims, ", "), fp32_mb, half, casts.us / 1e3, forward.us / 1e3, backward.us / 1e3);
  i.detail =
      "Autocast runs the loss in fp32, so the largest tensor of the step is cast up, read and "
      "written by log_softmax in both passes in fp32, and cast back: bandwidth-bound passes "
      "that show up as unrelated copy and softmax rows.";
  i.evidence = {{"logits_dims", dims},
                {"logits_fp32_mb", fp32_mb},
                {"model_precision", half},
                {"cast_us", casts.us},
                {"log_softmax_forward_us", forward.us},
                {"log_softmax_backward_us", backward.us},
                {"cast_ops", casts.ops.size()},
                {"model",
                 "a fused loss on the half-precision logits: the casts go, the softmax passes "
                 "move half the bytes"}};
  i.action_model =
      "Compute the loss on the bf16/fp16 logits with a fused, chunked cross-entropy "
      "(torch.compile the loss, or a fused linear + cross-entropy such as Liger's), drop the "
      "explicit .float() before it, and compute logits only where a loss is taken.";
  i.action_kernel =
      "One fused log-softmax + NLL kernel that reads the half-precision logits once (online "
      "softmax over the vocabulary) and writes the gradient in place.";
  i.verify =
      "parent_chain on a cast's UID shows where the logits are cast (an explicit .float() or "
      "autocast's fp32 list); the log_softmax rows' input type is float.";
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
