// Under autocast an op can be recorded with fp32 inputs while its kernels
// run in bf16/fp16 (the cast happens inside). TraceLens rates such an op
// against the fp32 peak, so its efficiency reads far too high. This rule
// names the ops, the dtype their kernels actually ran in, and the efficiency
// against that dtype's peak (TraceLens's column is kept as it is, for parity).
#include <map>

#include <fmt/format.h>

#include "insights/autocast.h"
#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

struct Group {
  const report::PerfOpRow* first = nullptr;
  std::vector<Uid> uids;
  double time_us = 0, gflops = 0;
  std::string kernel_dtype;
};

}  // namespace

void rule_autocast_dtype(const InsightContext& c, std::vector<Insight>& out) {
  if (!c.arch) return;
  std::map<std::string, Group> groups;
  for (const auto& row : c.rows) {
    auto d = detail::gemm_dims(c, row);
    if (!d || d->precision != "fp32" || !row.metrics->roofline) continue;
    const std::string kernel_dtype =
        gemm_compute_precision(c.trace, c.tree, row.event_uid != kNoUid ? row.event_uid : row.uid);
    if (kernel_dtype.empty()) continue;
    Group& g = groups[detail::gemm_label(row, *d)];
    if (!g.first) g.first = &row, g.kernel_dtype = kernel_dtype;
    g.uids.push_back(row.uid);
    g.time_us += row.kernel_time_us;
    g.gflops += row.metrics->gflops;
  }
  for (const auto& [label, g] : groups) {
    const auto& m = *g.first->metrics;
    std::string spec = "matrix_" + g.kernel_dtype;
    auto peak = c.arch->peak_tflops(spec);
    if (!peak || !(g.time_us > 0)) continue;
    double achieved_tflops = g.gflops / g.time_us * 1e3;  // GFLOP / µs = PFLOP/s
    double eff_kernel = achieved_tflops / *peak;
    double eff_recorded = m.roofline->pct / 100.0;
    Insight i = detail::op_insight(c, "autocast_dtype", "GEMM", g.uids, g.time_us);
    i.kernel_names = detail::kernel_names(c.trace, *g.first);
    // The fp32 inputs may be intended (kept out of autocast on purpose): at most medium.
    i.severity = i.share >= 0.05 ? "medium" : "low";
    i.gain_upper_bound_us = g.time_us * std::max(0.0, 1.0 - eff_kernel);
    i.title = fmt::format(
        "{}: recorded fp32, kernels run {}; efficiency {:.0f}% of the {} peak "
        "(TraceLens column: {:.0f}% of the fp32 peak)",
        label, g.kernel_dtype, 100 * eff_kernel, g.kernel_dtype, 100 * eff_recorded);
    i.detail =
        "The op's inputs were recorded in fp32 (autocast casts inside the op), but its "
        "kernels compute in " +
        g.kernel_dtype + "; rated against the fp32 peak it looks efficient when it is not.";
    i.evidence = {{"recorded_dtype", "fp32"},
                  {"kernel_dtype", g.kernel_dtype},
                  {"compute_spec_used", m.compute_spec},
                  {"compute_spec_of_kernel", spec},
                  {"peak_tflops_of_kernel_dtype", *peak},
                  {"achieved_tflops", achieved_tflops},
                  {"efficiency_vs_kernel_dtype_pct", 100 * eff_kernel},
                  {"efficiency_tracelens_pct", 100 * eff_recorded},
                  {"calls", g.uids.size()}};
    i.action_model =
        "Run the layer in the autocast dtype explicitly (cast the weights once) so "
        "the fp32 copies and casts disappear.";
    i.action_kernel = "Judge this GEMM against the " + g.kernel_dtype + " peak; tune it as a " +
                      g.kernel_dtype + " GEMM.";
    i.verify =
        "The op's subtree holds the same GEMM recorded in the narrower dtype (or kernel names "
        "carry it: bf16/f16 in cutlass_*/sm90_xmma_* names); look for aten::to / copy_ ops "
        "next to the op in parent_chain.";
    out.push_back(std::move(i));
  }
}

}  // namespace jarvis::insights
