// What is left in kernels a compiler already fused (torch.compile's Triton
// kernels: RMSNorm + residual, SiLU * mul, ...). They are memory-bound by
// design: one read of each input and one write of each output, the traffic
// TraceLens's Triton model counts from the call's tensors. Their headroom is
// their time above that traffic at 80 % of the HBM peak (what a streaming
// kernel sustains), usually small: the finding says "already fused, little
// left" so that nobody spends a day re-fusing them.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

constexpr double kSustainedShareOfPeak = 0.8;

}  // namespace

void rule_compiled_kernel_headroom(const InsightContext& c, std::vector<Insight>& out) {
  if (!c.arch || !(c.arch->mem_bw_gbps > 0)) return;
  const double sustained_tbs = kSustainedShareOfPeak * c.arch->mem_bw_gbps / 1e3;
  std::vector<Uid> uids;
  std::vector<std::string> kernels;
  double time_us = 0, bytes = 0, gain_us = 0, min_tbs = 0, max_tbs = 0;
  size_t calls = 0;
  for (const auto& row : c.rows) {
    if (row.category != "triton" || !row.metrics || !row.metrics->bytes) continue;
    if (!(row.kernel_time_us > 0) || !(*row.metrics->bytes > 0)) continue;
    const double tbs = *row.metrics->bytes / row.kernel_time_us / 1e6;
    min_tbs = calls ? std::min(min_tbs, tbs) : tbs;
    max_tbs = calls ? std::max(max_tbs, tbs) : tbs;
    ++calls;
    uids.push_back(row.uid);
    for (auto& name : detail::kernel_names(c.trace, row))
      if (std::find(kernels.begin(), kernels.end(), name) == kernels.end())
        kernels.push_back(std::move(name));
    time_us += row.kernel_time_us;
    bytes += *row.metrics->bytes;
    gain_us += std::max(0.0, row.kernel_time_us - *row.metrics->bytes / (sustained_tbs * 1e6));
  }
  if (calls == 0) return;
  Insight i = detail::op_insight(c, "compiled_kernel_headroom", "triton", uids, time_us);
  i.gain_upper_bound_us = gain_us;
  i.kernel_names = std::move(kernels);
  i.severity = detail::severity_by_share(detail::share_of(c, gain_us));
  const double peak_tbs = c.arch->mem_bw_gbps / 1e3;
  i.title = fmt::format(
      "Compiled Triton kernels are already fused: {} calls, {:.2f} ms ({:.1f}% of kernel time) "
      "at {:.1f}-{:.1f} TB/s, {:.0f}-{:.0f}% of the {:.1f} TB/s peak; {:.2f} ms left to {:.0f}% "
      "of peak",
      calls, time_us / 1e3, 100 * i.share, min_tbs, max_tbs, 100 * min_tbs / peak_tbs,
      100 * max_tbs / peak_tbs, peak_tbs, gain_us / 1e3, 100 * kSustainedShareOfPeak);
  i.detail =
      "Each compiled kernel reads its inputs and writes its outputs once (the traffic counted "
      "from the call's tensors); at this bandwidth there is little to gain from fusing them "
      "further. Look elsewhere first.";
  i.evidence = {{"calls", calls},
                {"kernel_time_us", time_us},
                {"bytes", bytes},
                {"min_tbs", min_tbs},
                {"max_tbs", max_tbs},
                {"peak_tbs", peak_tbs},
                {"sustained_share_of_peak", kSustainedShareOfPeak}};
  i.action_model = "None needed: the compiler fused these ops already.";
  i.action_kernel =
      "If they matter: Inductor's max-autotune (block sizes, num_warps) for the largest ones.";
  i.verify = "analyze_category(triton) lists each compiled kernel's TB/s.";
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
