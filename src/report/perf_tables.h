// Perf-model report sheets: `unified_perf_summary` (spec tree-and-timeline.md
// §15) and the per-family roofline sheets GEMM, SDPA_fwd, CONV_fwd,
// UnaryElementwise, BinaryElementwise, Normalization, Reduce_fwd, ...
// (spec perf-models.md §6), plus the per-op rows behind them for tools that
// need per-op FLOPs / bytes / roofline numbers (gemm_roofline, ops_summary).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "perf/gpu_arch.h"
#include "perf/metrics.h"
#include "report/report.h"
#include "report/table.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis {

// Appends unified_perf_summary and then the perf-model sheets, in TraceLens
// file order (only non-empty sheets). With options.arch set, the roofline
// columns appear as TraceLens writes them. build_report computes the same two
// parts, beside the other sheets.
void add_perf_tables(Report& report, const Trace& trace, const CallTree& tree,
                     const ReportOptions& options);

// unified_perf_summary, or nullopt when no op has a row. Each op's row is
// folded into its group as it is built: the same table as
// report::unified_perf_summary_table over report::unified_perf_rows, without
// holding the rows.
std::optional<Table> unified_perf_summary(const Trace& trace, const CallTree& tree,
                                          const ReportOptions& options);

namespace report {

// The per-family perf-model sheets (GEMM, SDPA_fwd, SDPA_bwd, ...) in
// TraceLens file order, only non-empty ones, and the model failures met
// while building them (sorted by op, then reason).
struct PerfSheets {
  std::vector<Table> tables;
  std::vector<ModelFailure> model_failures;
};
PerfSheets perf_model_sheets(const Trace& trace, const CallTree& tree, const GpuArch* arch);

// One modeled op instance with its metrics (a row before summarizing).
struct PerfOpRow {
  Uid uid = kNoUid;        // event UID (synthetic unified rows: a new UID past the trace)
  Uid event_uid = kNoUid;  // the trace event the row's args / pid / tid come from
  std::string name;
  // Names from the perf registry (perf/categories.h), which lives as long as
  // the program: views, not copies (a 1.3 GB trace has 234k rows).
  std::string_view category;  // §9 category (unified rows: sole-backward rows get bwd_category)
  std::string_view sheet;     // perf sheet family of the model ("" without a model)
  bool backward = false;      // metrics are the backward pass of the op
  bool has_perf_model = false;
  std::optional<perf::PerfMetrics> metrics;  // absent: no model, or the model failed
  double kernel_time_us = 0;                 // busy time of the op's kernels
  double duration_us = 0;                    // the op's own CPU duration
  std::vector<Uid> kernels;  // GPU events attributed to the op (sorted by ts for metric rows)
};

// Metric rows of a sheet family ("GEMM", "SDPA", ...) for one direction, as
// TraceLens builds them before summarizing: every event whose name belongs
// to the family, array order; ops without a model for the direction and
// failed ops are left out (backward: ops without linked backward events too).
// Model failures are counted into `failures` (op name, reason) when given.
using ModelFailureCounts = std::map<std::pair<std::string, std::string>, size_t>;
std::vector<PerfOpRow> perf_sheet_rows(const Trace& trace, const CallTree& tree,
                                       std::string_view family, bool backward, const GpuArch* arch,
                                       ModelFailureCounts* failures = nullptr);

// The events of every sheet family, array order, from one pass over the
// trace (family name -> UIDs). Build it once and pass it to the overload
// below when rows of several families are wanted: the plain overload builds
// it on every call.
using FamilyIndex = std::unordered_map<std::string_view, std::vector<Uid>>;
FamilyIndex events_by_family(const Trace& trace);
std::vector<PerfOpRow> perf_sheet_rows(const Trace& trace, const CallTree& tree,
                                       const FamilyIndex& by_family, std::string_view family,
                                       bool backward, const GpuArch* arch,
                                       ModelFailureCounts* failures = nullptr);

// The rows of the unified table (§15.2–15.3) in collection order: ops with a
// model at their outermost modeled level, sole backward ops, leaf launchers
// without a model and synthetic rows for left-over kernels.
std::vector<PerfOpRow> unified_perf_rows(const Trace& trace, const CallTree& tree,
                                         const GpuArch* arch, bool include_python_frames = false);

// Tables from rows (exposed for tests and tools).
Table unified_perf_summary_table(const Trace& trace, const std::vector<PerfOpRow>& rows);
Table perf_sheet_summary_table(const Trace& trace, const std::vector<PerfOpRow>& rows,
                               std::string name);

}  // namespace report
}  // namespace jarvis
