// Insights: expert judgments a performance engineer would add to the
// numbers (beyond TraceLens). A rule engine over the engine's typed rows:
// each rule is one small function in its own file (rule_*.cpp) that attaches
// structured insights with evidence, impact and the action in both paths of
// the workflow (Path A: change the model; Path B: tune the kernel).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "perf/gpu_arch.h"
#include "report/gpu_timeline.h"
#include "report/perf_tables.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis::insights {

struct Insight {
  std::string rule;      // rule id, e.g. "gemm_unaligned_dims"
  std::string severity;  // "high", "medium", "low"
  std::string scope;     // "op", "kernel", "category", "trace"
  std::string category;  // op category the insight is about ("" for the trace)
  std::string title;     // one line, with the numbers
  std::string detail;    // why it matters, in a sentence or two
  // Evidence: the ops and kernels it is about, and the numbers behind it.
  std::vector<Uid> uids;
  std::vector<std::string> kernel_names;  // full names, never truncated
  nlohmann::json evidence = nlohmann::json::object();
  // Impact: kernel time the insight covers, its share of all kernel time and
  // an upper bound of the time a fix could recover (null when unknown).
  double time_us = 0;
  double share = 0;
  std::optional<double> gain_upper_bound_us;
  std::string action_model;   // Path A
  std::string action_kernel;  // Path B
  std::string verify;         // how to check it before repeating it
};

// What the rules read. Build once per trace (run_insights does).
struct InsightContext {
  const Trace& trace;
  const CallTree& tree;
  const GpuArch* arch = nullptr;        // null: rules needing peaks skip
  std::vector<report::PerfOpRow> rows;  // unified perf rows
  double total_kernel_time_us = 0;      // sum over rows
  std::optional<GpuTimeline> timeline;  // absent when the trace has no GPU events
  std::string gpu_name;                 // from the trace
};

// `timeline`: compute_gpu_timeline(trace, tree) when the caller has it already
// (null: computed here; a trace without GPU events has none either way).
InsightContext make_context(const Trace& trace, const CallTree& tree, const GpuArch* arch,
                            const GpuTimeline* timeline = nullptr);

// Every rule over the context; sorted by gain upper bound (then time),
// largest first.
std::vector<Insight> run_insights(const InsightContext& context);

// The rule ids, in the order they run.
std::vector<std::string> rule_ids();

nlohmann::json to_json(const Insight& insight);

}  // namespace jarvis::insights
