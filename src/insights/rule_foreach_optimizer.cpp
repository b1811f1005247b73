// An Adam/AdamW step run by the foreach implementation: each of its
// torch._foreach_* ops is one multi_tensor_apply pass over every parameter,
// so the update streams the optimizer state through HBM about 20 times
// (element reads + writes per parameter, counted from torch.optim's
// _multi_tensor_adam(w): mul_ 2, lerp_ 3, mul_ 2, addcmul_ 3, sqrt 2, div_ 2,
// add_ 2, addcdiv_ 4), where the fused implementation (fused=True, one
// _fused_adamw_ kernel per tensor group) reads param, grad, exp_avg and
// exp_avg_sq once and writes three of them back: 7. Both are bandwidth-bound,
// so the fused step takes about 7/20 of the time.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

constexpr double kFusedTrafficRatio = 7.0 / 20.0;
// The ops every foreach Adam/AdamW step runs (lerp_ is AdamW's exp_avg update
// since PyTorch 2.1; older releases use mul_ + add_).
constexpr std::string_view kAdamSignature[] = {"aten::_foreach_addcmul_", "aten::_foreach_addcdiv_",
                                               "aten::_foreach_sqrt"};

bool is_fused_optimizer(std::string_view name) {
  return name.starts_with("aten::_fused_adam") || name.starts_with("aten::_fused_sgd");
}

}  // namespace

void rule_foreach_optimizer(const InsightContext& c, std::vector<Insight>& out) {
  const Trace& t = c.trace;
  std::map<std::string_view, double> time_by_op;
  std::vector<Uid> uids;
  std::set<std::string> kernels;
  size_t kernel_count = 0;
  for (Uid u : detail::events_named(c, [](std::string_view name) {
         return is_fused_optimizer(name) || name.starts_with("aten::_foreach_");
       })) {
    const Event& e = t.events[u];
    if (e.cat != Cat::CpuOp) continue;
    std::string_view name = t.name(u);
    if (is_fused_optimizer(name)) return;  // already fused; else an aten::_foreach_ op
    double us = 0;
    for (Uid k : c.tree.direct_kernels(u)) {
      if (!t.events[k].has_dur()) continue;
      us += t.events[k].dur();
      ++kernel_count;
      if (kernels.size() < 8) kernels.emplace(t.name(k));
    }
    if (us <= 0) continue;
    time_by_op[name] += us;
    uids.push_back(u);
  }
  for (std::string_view op : kAdamSignature)
    if (!time_by_op.count(op)) return;
  double time_us = 0;
  for (const auto& entry : time_by_op) time_us += entry.second;
  // The optimizer's name, when a record_function annotation gives it.
  std::string optimizer = "Adam/AdamW";
  for (Uid u : detail::events_named(
           c, [](std::string_view name) { return name.starts_with("Optimizer.step#"); }))
    if (t.events[u].cat == Cat::UserAnnotation) {
      std::string_view n = t.name(u).substr(15);
      optimizer = std::string(n.substr(0, n.find('.')));
      break;
    }
  Insight i;
  i.rule = "foreach_optimizer";
  i.scope = "category";
  i.category = "multi_tensor_apply";
  i.time_us = time_us;
  i.share = detail::share_of(c, time_us);
  i.severity = detail::severity_by_share(i.share);
  i.gain_upper_bound_us = time_us * (1 - kFusedTrafficRatio);
  // The GPU idle the host opened inside the optimizer step: a fused step
  // issues a few launches instead of one per foreach pass and tensor chunk,
  // so those waits go with them.
  double idle_us = 0;
  for (const auto& [place, us] : detail::host_work_idle_by_place(c))
    if (place.starts_with("Optimizer.step#")) {
      i.idle_claim_us[place] = us;
      idle_us += us;
    }
  if (idle_us > 0) {
    i.time_us += idle_us;
    *i.gain_upper_bound_us += idle_us;
    i.gain_method =
        "fused-traffic model for the kernels, plus the GPU idle the host opened inside the "
        "optimizer step";
  }
  i.title = fmt::format(
      "{} runs as {} foreach passes ({} multi_tensor_apply kernels, {:.2f} ms); a fused "
      "optimizer step would take about {:.2f} ms",
      optimizer, time_by_op.size(), kernel_count, time_us / 1e3,
      time_us * kFusedTrafficRatio / 1e3);
  if (idle_us > 0) {
    // A total over the trace like the kernels' time, with the per-step figure
    // beside it (the blind run read "inside the step" as per step).
    const size_t steps = c.step ? std::max<size_t>(1, c.step->measured.iterations.size()) : 1;
    i.title += steps > 1 ? fmt::format(
                               "; the GPU also waits {:.2f} ms for its launches inside the "
                               "optimizer steps ({:.2f} ms a step over {} steps)",
                               idle_us / 1e3, idle_us / 1e3 / static_cast<double>(steps), steps)
                         : fmt::format(
                               "; the GPU also waits {:.2f} ms for its launches inside the "
                               "optimizer step",
                               idle_us / 1e3);
  }
  i.detail =
      "Each torch._foreach_* op streams whole parameter/state lists through HBM once; the "
      "foreach Adam(W) update moves about 20 elements per parameter, a fused update 7. The "
      "kernels are bandwidth-bound, so the gain is the traffic saved, not kernel tuning.";
  i.uids = std::move(uids);
  i.kernel_names.assign(kernels.begin(), kernels.end());
  nlohmann::json per_op = nlohmann::json::object();
  for (const auto& [op, us] : time_by_op) per_op[std::string(op)] = us;
  i.evidence = {{"optimizer", optimizer},    {"foreach_ops_time_us", per_op},
                {"kernels", kernel_count},   {"fused_traffic_ratio", kFusedTrafficRatio},
                {"kernel_time_us", time_us}, {"host_idle_in_step_us", idle_us}};
  i.action_model = fmt::format(
      "Construct the optimizer with fused=True (torch.optim.{}(..., fused=True)), "
      "or compile the step (torch.compile on optimizer.step).",
      optimizer == "Adam/AdamW" ? "AdamW" : optimizer);
  i.action_kernel =
      "None at kernel level: each multi_tensor_apply pass is already bandwidth-bound; fewer "
      "passes is the fix.";
  i.verify =
      "parent_chain(op_name=\"Optimizer.step#...\") lists the foreach ops under the step; "
      "ops_summary(category=\"multi_tensor_apply\") gives their time. Fused params need "
      "floating-point CUDA/ROCm tensors.";
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
