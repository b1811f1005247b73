// Kernel-fusion candidates (TraceLens orchestrator_prepare Step 4b,
// standalone mode): modules and sibling-op sequences that launch several
// unfused kernels, written as category_data/fusion_candidates.json.
// Semantics: docs in /work/shared/spec/agent-outputs.md §3.6.
#pragma once

#include <string>
#include <string_view>

#include "categories/category_analysis_common.h"
#include "report/table.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis::analysis {

// TraceLens classify_kernel(name)[0]: the kernel type of the highest-priority
// matching rule of the kernel-type regex table ("Unknown" when no rule of
// priority >= 5 matches).
std::string classify_kernel_type(std::string_view kernel_name);

// The fusion candidate list (JSON array), sorted by total_kernel_time_us
// descending. Builds its own call tree with python frames, as TraceLens
// rebuilds it for this step. `unified_perf_summary` (the Step 1 table) drives
// attention narrowing, de-duplication and the data_in/out_mb enrichment;
// pass nullptr to skip that post-processing (TraceLens without the CSV).
ojson fusion_candidates(const Trace& trace, const Table* unified_perf_summary);
// The same with the python-frames call tree already built
// (CallTree(trace, {.include_python_frames = true})).
ojson fusion_candidates(const Trace& trace, const CallTree& python_frames_tree,
                        const Table* unified_perf_summary);

}  // namespace jarvis::analysis
