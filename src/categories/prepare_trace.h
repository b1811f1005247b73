// The trace-driven half of the orchestrator preparation: builds the perf
// report from a trace (TraceLens Step 1), the multi-kernel data (Step 4.5),
// the fusion candidates (Step 4b, fusion_candidates.h)
// and the per-category tree data, then runs prepare_category_data.
#pragma once

#include <map>
#include <string>

#include "categories/prepare.h"
#include "insights/insights.h"
#include "report/report.h"
#include "report/table.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis {
class LoadedTrace;
}

namespace jarvis::analysis {

// For an XPlane trace, a preparation also writes TraceLens's JAX report
// sheets (those of `jarvis report TRACE.xplane.pb`) into OUT/<this>/.
inline constexpr const char* kJaxReportCsvDir = "jax_perf_report_csvs";

// Every sheet `jarvis report` writes for an XPlane trace: TraceLens's JAX
// report (xplane::jax_report_tables), then, when the trace has collective
// kernels, `rank_collectives` (collectives::rank_collectives_table: per
// kernel message size, group size, algbw and busbw from the HLO shapes;
// jarvis's, TraceLens's JAX report has no collective sheet).
std::vector<Table> xplane_report_tables(const Trace& trace);

struct TracePrepareOptions {
  std::string platform;  // arch name ("MI300X", case-insensitive) or arch JSON path
  std::string output_dir;
  std::string category = "all";
  std::string trace_path;  // recorded in metadata; defaults to trace.path
  bool tree_data = true;   // write category_data/<cat>_tree_data.json
  int tree_subtree_depth = 3;
};

// Trace -> report (TraceLens generate_perf_report defaults plus
// kernel_summary / short-kernel sheets) for an arch name or arch JSON path;
// an unknown arch is std::invalid_argument.
Report perf_report(const Trace& trace, const CallTree& tree, const std::string& platform);
// perf_report's tables keyed by sheet name.
std::map<std::string, Table> perf_report_tables(const Trace& trace, const CallTree& tree,
                                                const std::string& platform);

// category_data/multi_kernel_data.json from every GPU event of the trace
// (unlinked ones included, as TraceLens's GPUEventAnalyser(tree.events)).
ojson multi_kernel_data(const Trace& trace, const CallTree& tree);

// <cat>_tree_data.json content per category key (see docs/outputs.md):
// {"<uid>": {name, uid, time_ms, percent_of_category, operation_count,
//  Input Dims, Input type, parent_chain[], subtree}} for the category's
// bottleneck rows (> 10 % of its kernel time, else the top 5).
std::map<std::string, ojson> category_tree_data(const Trace& trace, const CallTree& tree,
                                                const Table& unified_perf_summary,
                                                int subtree_depth = 3);

// What a preparation derives from the trace itself (the expensive part, the
// same for every category and output directory of one trace, arch and tree
// options): multi_kernel_data.json, fusion_candidates.json, the per-category
// tree data and the text of category_data/insights.json.
struct PreparedTraceData {
  ojson multi_kernel_data;
  ojson fusion_candidates;
  std::map<std::string, ojson> tree_data;  // empty unless options.tree_data
  std::string insights_json;
};

// `python_frames_tree`: CallTree(trace, {.include_python_frames = true}) when
// the caller has it (null: built here). `timeline`: the report's GPU timeline
// (null: computed where needed). `step`: the trace's step model when the
// caller keeps one (a loaded trace's; null: built here, once).
PreparedTraceData prepared_trace_data(const Trace& trace, const CallTree& tree,
                                      const CallTree* python_frames_tree, const TableRefs& tables,
                                      const TracePrepareOptions& options,
                                      const GpuTimeline* timeline = nullptr,
                                      const insights::StepModelRef* step = nullptr);

// Writes the preparation from tables and data already computed.
PrepareResult prepare_with_data(const Trace& trace, const TableRefs& tables,
                                const PreparedTraceData& data, const TracePrepareOptions& options);

// The preparation of a loaded trace (MCP category_filter): the report, the
// python-frames call tree and the PreparedTraceData are cached on the loaded
// trace and shared read-only, so a second call (another category, another
// output directory) only writes files. Same files as prepare_from_trace.
PrepareResult prepare_from_loaded_trace(const LoadedTrace& entry,
                                        const TracePrepareOptions& options);

// prepare_from_trace with report tables already built (e.g. a cached report
// built for the same arch).
PrepareResult prepare_from_report(const Trace& trace, const CallTree& tree,
                                  const std::vector<Table>& report_tables,
                                  const TracePrepareOptions& options);

// Everything `jarvis prepare TRACE` does. Throws std::invalid_argument /
// std::runtime_error with a specific message on bad input.
PrepareResult prepare_from_trace(const Trace& trace, const TracePrepareOptions& options);

}  // namespace jarvis::analysis
