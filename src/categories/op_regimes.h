// Regimes of a compute category's ops (beyond TraceLens): which ops are
// latency-bound (roofline time of one call below the trace's kernel latency
// floor), memory-bound or compute-bound, and how much kernel time tuning
// could still save (report/op_regime.h: down to the roofline, or for a
// latency-bound op only down to the floor). TraceLens's impact estimates
// assume every modeled op can approach its roofline; for µs-scale decode ops
// that promise is empty, and these numbers say so.
//
// Reads only the prepared files, like the category analyses:
// category_data/<cat>_ops.csv, perf_report_csvs/unified_perf_summary.csv (the
// floor) and metadata/<cat>_metadata.json (end-to-end time).
#pragma once

#include <string>

#include "categories/category_analysis_common.h"

namespace jarvis::analysis {

// {latency_floor_us, floor_basis, e2e_ms, ops[{name, args, regime,
//  roofline_us, kernel_mean_us, count, time_ms, tuning_headroom_ms}],
//  by_regime{<regime>: {ops, time_ms, tuning_headroom_ms}},
//  latency_bound_time_ms, tuning_headroom_ms, tuning_headroom_pct}; ops in
// the order of the metrics' operations (kernel time, largest first). Null
// when the category has no ops CSV.
ojson category_regimes(const std::string& output_dir, const std::string& category);

// The entry of `regimes.ops` for an op of the metrics: same name and args and
// the time_ms the metrics rounded (else the first of that name and args), or
// nullptr.
const ojson* regime_of_op(const ojson& regimes, const ojson& op);

// Adds `regime` and `tuning_headroom_ms` of each op's entry to a copy of the
// metrics' operations (the agent-facing result; the metrics file stays
// TraceLens's).
void annotate_operations(ojson& operations, const ojson& regimes);

// One line for a text summary: latency-bound ops and the tuning headroom
// ("" when null or without a floor).
std::string regimes_summary(const ojson& regimes);

// Markdown section "## Regimes" of a category_regimes result ("" when null).
std::string regimes_markdown(const ojson& regimes);

}  // namespace jarvis::analysis
