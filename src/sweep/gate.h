// A regression gate: baseline runs against candidate runs (repeats of the
// same program before and after a change), per step, GPU-timeline category,
// GEMM op and kernel: slower, faster, same or cannot tell, with the rank
// test's p, the bootstrap interval and the sample sizes (significance.h).
// The unit of repetition is the run: each run gives one value per metric.
// Regression = some metric slower with p < alpha and a median change beyond
// the user's threshold; the CLI exits 1 then, which is what a CI job checks.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "report/table.h"
#include "sweep/significance.h"
#include "sweep/sweep.h"

namespace jarvis::sweep {

// One run's metrics by key "<level>/<name>": step/step_time_ms (mean
// ProfilerStep), category/<timeline type> (ms), op/<op> <shape> (GEMM
// kernel time sum, µs), kernel/<name> (GPU time sum, µs).
using RunMetrics = std::map<std::string, double>;
RunMetrics run_metrics(const RunData& run);

struct GateSide {
  std::vector<std::string> runs;  // paths
  std::vector<RunMetrics> metrics;
};
// Every run under the paths: a trace / report file is one run, a directory
// a sweep whose runs are all repeats. Throws SweepError when a path gives no run.
GateSide gate_side(const std::vector<std::string>& paths, const LoadOptions& options);

struct GateOptions {
  double alpha = 0.05;
  double threshold_pct = 2.0;
  // Ops and kernels below this share of the baseline's GPU busy time are
  // not judged: many tiny kernels at alpha would flag one by chance.
  double min_share_pct = 1.0;
};

struct GateRow {
  std::string level, name, unit;
  SampleComparison cmp;
};

struct GateResult {
  size_t base_runs = 0, cand_runs = 0;
  std::vector<GateRow> rows;  // step, categories, then ops and kernels by change
  size_t not_judged = 0;      // ops / kernels under min_share_pct or missing from a side
  bool regression = false;
};
GateResult gate(const GateSide& base, const GateSide& cand, const GateOptions& options);
Table gate_table(const GateResult& result);
// At most ~10 lines: the verdict, the step row, the regressions.
std::string gate_summary(const GateResult& result, const GateOptions& options);

// Named baselines: the per-run metrics kept as DIR/NAME.json (DIR "" =
// <cache dir>/gate_baselines). A name is letters, digits, '.', '_' and '-'.
std::string save_baseline(const std::string& name, const GateSide& side, const std::string& dir);
GateSide load_baseline(const std::string& name, const std::string& dir);
// The MCP server's agents keep the baselines they save in a directory of
// their own (<cache dir>/gate_baselines/agents), so an agent's save never
// replaces one a person saved with the CLI; they read theirs first, then the
// person's of that name. `from`: the file read.
std::string save_agent_baseline(const std::string& name, const GateSide& side);
GateSide load_agent_baseline(const std::string& name, std::string* from = nullptr);

}  // namespace jarvis::sweep
