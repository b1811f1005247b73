// The trace-driven half of the orchestrator preparation: builds the perf
// report from a trace (TraceLens Step 1), the multi-kernel data (Step 4.5),
// the fusion candidates (Step 4b, fusion_candidates.h)
// and the per-category tree data, then runs prepare_category_data.
#pragma once

#include <map>
#include <string>

#include "categories/prepare.h"
#include "report/table.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis::analysis {

struct TracePrepareOptions {
  std::string platform;  // arch name ("MI300X", case-insensitive) or arch JSON path
  std::string output_dir;
  std::string category = "all";
  std::string trace_path;  // recorded in metadata; defaults to trace.path
  bool tree_data = true;   // write category_data/<cat>_tree_data.json
  int tree_subtree_depth = 3;
};

// Trace -> report tables (TraceLens generate_perf_report defaults plus
// kernel_summary / short-kernel sheets), keyed by sheet name.
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

// prepare_from_trace with report tables already built (e.g. a cached report
// built for the same arch).
PrepareResult prepare_from_report(const Trace& trace, const CallTree& tree,
                                  const std::vector<Table>& report_tables,
                                  const TracePrepareOptions& options);

// Everything `jarvis prepare TRACE` does. Throws std::invalid_argument /
// std::runtime_error with a specific message on bad input.
PrepareResult prepare_from_trace(const Trace& trace, const TracePrepareOptions& options);

}  // namespace jarvis::analysis
