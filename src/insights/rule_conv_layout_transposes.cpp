// Layout conversions around convolutions: cuDNN's nchwToNhwc / nhwcToNchw
// kernels (MIOpen's batched_transpose) run when a model keeps NCHW tensors
// while the fast convolution kernels work in NHWC. Every conversion is a
// full read and write of an activation; channels_last removes them.
#include <algorithm>

#include <fmt/format.h>

#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

bool is_layout_conversion(std::string_view name) {
  for (std::string_view marker : {"nchwToNhwc", "nhwcToNchw", "nchw2nhwc", "nhwc2nchw",
                                  "batched_transpose", "NCHWToNHWC", "NHWCToNCHW"})
    if (name.substr(0, 512).find(marker) != std::string_view::npos) return true;
  return false;
}

}  // namespace

void rule_conv_layout_transposes(const InsightContext& c, std::vector<Insight>& out) {
  double conversion_us = 0;
  size_t conversions = 0;
  std::vector<Uid> ops;  // the host ops that launched a conversion
  std::vector<std::string> names;
  for (size_t u = 0; u < c.trace.events.size(); ++u) {
    const Event& e = c.trace.events[u];
    if (!e.is_gpu() || !e.has_dur() || !is_layout_conversion(c.trace.name(static_cast<Uid>(u))))
      continue;
    conversion_us += e.dur();
    ++conversions;
    std::string_view name = c.trace.name(static_cast<Uid>(u));
    if (std::find(names.begin(), names.end(), name) == names.end()) names.emplace_back(name);
    Uid op = c.tree.parent(static_cast<Uid>(u));  // the runtime launch, then its op
    while (op != kNoUid && c.trace.events[op].cat != Cat::CpuOp) op = c.tree.parent(op);
    if (op != kNoUid && std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
  }
  if (conversions == 0) return;
  Insight i;
  i.rule = "conv_layout_transposes";
  i.scope = "kernel";
  i.category = "CONV";
  i.uids = ops;
  i.kernel_names = names;
  i.time_us = conversion_us;
  i.share = detail::share_of(c, conversion_us);
  i.severity = detail::severity_by_share(i.share);
  i.gain_upper_bound_us = conversion_us;
  i.title = fmt::format(
      "{} NCHW<->NHWC layout conversions around convolutions: {:.1f} us "
      "({:.1f}% of kernel time) in {} ops",
      conversions, conversion_us, 100 * i.share, ops.size());
  i.detail =
      "The convolution kernels run in NHWC while the model's tensors are NCHW, so every "
      "convolution converts its input and output: pure memory traffic.";
  i.evidence = {
      {"conversions", conversions}, {"conversion_time_us", conversion_us}, {"ops", ops.size()}};
  i.action_model =
      "Use channels_last: model.to(memory_format=torch.channels_last) and the same "
      "for the inputs (autocast keeps the format).";
  i.action_kernel =
      "Convolution kernels that accept NCHW directly for these shapes (cuDNN / "
      "MIOpen engine choice), or fuse the conversion into the producer.";
  i.verify =
      "The conversion kernels are named nchwToNhwcKernel / nhwcToNchwKernel (cuDNN) or "
      "batched_transpose (MIOpen); parent_chain on a UID shows the convolution they serve.";
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
