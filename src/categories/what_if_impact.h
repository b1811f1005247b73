// Impact ranges of the category findings grounded in the critical-path
// what-if (docs/critical-path.md): instead of "this op's share of GPU time
// times the gap to its roofline", the step-time saving the dependency graph
// predicts when the op's kernels reach the efficiency target. A faster kernel
// that is not on the critical path saves nothing; one on it saves at most
// until another path takes over.
#pragma once

#include <string>

#include "categories/category_analysis_common.h"

namespace jarvis::analysis {

// The trace a prepared directory was made from (the manifest's trace_path:
// absolute, else relative to output_dir, else to the working directory), or
// "" when none of those exists.
std::string prepared_trace_path(const std::string& output_dir);

// For each entry of metrics["impact_estimates"] (a compute category's
// <cat>_metrics.json), the what-if on the graph of `trace_path`: the
// kernels of that operation (same name, and same Input Dims / Input type when
// the metrics give them) scaled to the two targets of the estimate (low: 75 %
// of the gap to the roofline recovered, high: all of it; ops without a perf
// model: 15 % and 45 % of their time saved), and the predicted saving of the
// mean step time. Returns
//   {"method": "what_if", "trace", "step_time_us", "iterations",
//    "iterations_source", "estimates": [{operation, args?, factor_low,
//    factor_high, kernels, kernel_time_ms, saving_low_us, saving_high_us,
//    impact_low_pct, impact_high_pct (of the step time), trace_time_impact_low
//    / _high (the metrics' own range, % of GPU time), method}]}
// or, when no graph can be built (no trace, no GPU work, a load error),
// {"method": "trace_time_share", "reason", "estimates": []}: the metrics' own
// ranges stand. An estimate whose kernels are not found keeps method
// "trace_time_share" with a reason.
ojson what_if_impacts(const ojson& metrics, const std::string& trace_path);

}  // namespace jarvis::analysis
