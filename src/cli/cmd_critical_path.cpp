// jarvis critical-path TRACE... --out DIR
// jarvis what-if TRACE... --out DIR [--rank R] [--category C] [--op O] [--kernel K]
//                         [--factor F | --median-rank] [--remove-launch-gaps]
//                         [--overlap-collective NAME] [--remove-host-gaps
//                         [--host-gap-after OP] [--host-gap-before OP] [--host-gap-min-us US]]
//
// The cross-rank critical path per iteration and what a change would buy
// (docs/critical-path.md).
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "engine/engine.h"

namespace jarvis::cli {
namespace {

struct CriticalPathArgs {
  std::vector<std::string> traces;
  std::string out;
  bool recorded_host = false;
  ProgressFlags progress;
};

struct WhatIfArgs : CriticalPathArgs {
  int64_t rank = -1;
  std::string category, op, kernel, overlap;
  double factor = 1.0;
  bool median = false, remove_gaps = false;
  std::vector<std::string> remove_ops;
  std::vector<uint32_t> remove_uids;
  std::vector<uint32_t> kernel_uids;
  std::string remove_python_frame;
  bool remove_waits_only = false;
  bool remove_host_gaps = false;
  engine::HostGapSelector host_gaps;
};

engine::RankGraph load(const CriticalPathArgs& a, Progress& progress) {
  std::vector<std::string> traces = expand_rank_traces(a.traces);
  progress.phase(fmt::format("load {} trace(s) and build the graph", traces.size()));
  return engine::load_graph(traces);
}

void print_notes(const engine::CriticalPathAnalysis& analysis) {
  for (const std::string& note : analysis.notes) fmt::print("note: {}\n", note);
}

int run_critical_path(const CriticalPathArgs& a) {
  Progress progress(a.progress.resolve(), "critical-path");
  auto loaded = load(a, progress);
  progress.phase("critical path");
  engine::CriticalPathAnalysis analysis =
      engine::critical_path_analysis(loaded.graph, a.recorded_host);
  auto files = engine::write_critical_path(analysis, a.out);
  progress.finish();
  for (const std::string& f : files) fmt::print("{}\n", f);
  fmt::print("{}\n", analysis.summary);
  if (analysis.estimated_unprofiled_step_us)
    fmt::print(
        "step time {:.1f} us without the profiler (estimated; recorded {:.1f} us) over {} "
        "iteration(s), {} rank(s)\n",
        *analysis.estimated_unprofiled_step_us, analysis.recorded_step_time_us,
        analysis.iterations.size(), analysis.ranks.size());
  else
    fmt::print("step time {:.1f} us as recorded over {} iteration(s), {} rank(s)\n",
               analysis.step_time_us, analysis.iterations.size(), analysis.ranks.size());
  for (const auto& it : analysis.iterations)
    fmt::print("  {}: {:.1f} us, bound by {} ({})\n", it.name, it.length_us, it.bound_by,
               it.bound_reason);
  for (size_t k = 0; k < analysis.contributors.size() && k < 5; ++k) {
    const auto& c = analysis.contributors[k];
    fmt::print("  {:5.1f}%  rank {} {} {} {}\n", 100 * c.share, c.rank, c.category, c.op, c.kernel);
  }
  print_notes(analysis);
  return 0;
}

int run_what_if(WhatIfArgs a) {
  if (a.median && a.factor != 1.0) usage_error("--factor and --median-rank exclude each other");
  engine::WhatIfScenario sc;
  if (a.rank >= 0) sc.select.rank = a.rank;
  sc.select.category = a.category;
  sc.select.op = a.op;
  sc.select.kernel = a.kernel;
  sc.select.gpu_uids = a.kernel_uids;
  sc.factor = a.factor;
  sc.median_rank = a.median;
  sc.remove_launch_gaps = a.remove_gaps;
  sc.overlap_collective = a.overlap;
  sc.recorded_host = a.recorded_host;
  engine::HostRemoval rm;
  if (a.rank >= 0) rm.rank = a.rank;
  rm.ops = a.remove_ops;
  rm.uids = a.remove_uids;
  rm.python_frame = a.remove_python_frame;
  rm.waits_only = a.remove_waits_only;
  if (rm.waits_only && rm.empty())
    usage_error("--remove-waits-only needs --remove-op, --remove-uid or --remove-python-frame");
  if (!a.remove_host_gaps && (!a.host_gaps.after.empty() || !a.host_gaps.before.empty()))
    usage_error("--host-gap-after and --host-gap-before need --remove-host-gaps");
  Progress progress(a.progress.resolve(), "what-if");
  auto loaded = load(a, progress);
  progress.phase("replay");
  engine::add_host_removal(loaded, rm, sc);
  if (a.remove_host_gaps) {
    if (a.rank >= 0) a.host_gaps.rank = a.rank;
    engine::add_host_gap_removal(loaded, a.host_gaps, sc);
  }
  engine::WhatIfResult result = engine::what_if(loaded.graph, sc);
  auto files = engine::write_what_if(result, sc, a.out);
  progress.finish();
  for (const std::string& f : files) fmt::print("{}\n", f);
  for (const std::string& c : result.changes) fmt::print("{}\n", c);
  fmt::print(
      "step time {}: {:.1f} us, predicted {:.1f} us ({:+.1f}%); as recorded: {:.1f} us, "
      "predicted {:.1f} us\n",
      result.model == "unprofiled" ? "without the profiler (estimated)" : "as recorded",
      result.measured_step_time_us, result.predicted_step_time_us,
      100 * (result.predicted_step_time_us / result.measured_step_time_us - 1),
      result.recorded_step_time_us, result.predicted_profiled_step_time_us);
  fmt::print("{}\n", result.summary);
  print_notes(result.predicted);
  return 0;
}

void add_common(CLI::App* cmd, CriticalPathArgs& a) {
  cmd->add_option("TRACE", a.traces,
                  "one trace per rank (rank from distributedInfo, else the order given) or a "
                  "directory of them; one trace gives the path of one GPU and its host")
      ->required();
  cmd->add_option("-o,--out", a.out, "output directory (created)")
      ->check(output_directory())
      ->required();
  cmd->add_flag("--recorded-host", a.recorded_host,
                "replay the host as recorded, profiler cost included (default: without the "
                "profiler's estimated host cost)");
  add_progress_flags(cmd, a.progress);
}

}  // namespace

Runner add_critical_path(CLI::App& app) {
  auto a = std::make_shared<CriticalPathArgs>();
  CLI::App* cmd = app.add_subcommand(
      "critical-path",
      "critical path of each iteration across ranks: what sets the step time, and who waits "
      "for whom");
  add_common(cmd, *a);
  cmd->footer(
      "Writes DIR/critical_path_summary.json (step_time_us, iterations, contributors, waits)\n"
      "and DIR/path_iteration<K>.csv (the path's segments in time order).");
  return [a] { return run_critical_path(*a); };
}

Runner add_what_if(CLI::App& app) {
  auto a = std::make_shared<WhatIfArgs>();
  CLI::App* cmd = app.add_subcommand(
      "what-if", "predict the step time after a change, by replaying the dependency graph");
  add_common(cmd, *a);
  cmd->add_option("--rank", a->rank, "only this rank's ops");
  cmd->add_option("--category", a->category,
                  "ops of this perf category (GEMM, elementwise, SDPA_fwd, communication, ...)");
  cmd->add_option("--op", a->op,
                  "ops launched by an op of this name, else whose op name contains it "
                  "(case-insensitive)");
  cmd->add_option("--kernel", a->kernel,
                  "kernels of this name, else whose name contains it (case-insensitive; the "
                  "kernels it took are listed)");
  cmd->add_option("--factor", a->factor, "multiply the selected ops' durations by this")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--median-rank", a->median,
                "make the selected ops of each selected rank as fast as the median rank's");
  cmd->add_flag("--remove-launch-gaps", a->remove_gaps,
                "a CUDA graph of each iteration: launch calls and the host gaps between them "
                "take no time; kernels, streams and syncs stay");
  cmd->add_option("--overlap-collective", a->overlap,
                  "collective (name substring, or 'all') fully overlapped: no transfer time");
  cmd->add_option("--remove-op", a->remove_ops,
                  "host events with this exact name (aten::item, an annotation) taken out "
                  "whole: their host time, the syncs and the GPU work inside (repeatable)");
  cmd->add_option("--kernel-uid", a->kernel_uids,
                  "only these GPU events (uids; of --rank's trace when several), scaled by "
                  "--factor (repeatable)");
  cmd->add_option("--remove-uid", a->remove_uids,
                  "the same for a host event by uid (of --rank's trace when several; "
                  "repeatable)");
  cmd->add_option("--remove-python-frame", a->remove_python_frame,
                  "the same for python frames whose name contains this (with_stack traces)");
  cmd->add_flag("--remove-waits-only", a->remove_waits_only,
                "the removed events keep their time: only the syncs inside stop waiting");
  cmd->add_flag("--remove-host-gaps", a->remove_host_gaps,
                "take out host time no event records (Python between ops: batch preparation, "
                "logging) inside the steps, between two recorded events");
  cmd->add_option("--host-gap-after", a->host_gaps.after,
                  "only the stretches after the op (its outermost op) or call of this exact name");
  cmd->add_option("--host-gap-before", a->host_gaps.before,
                  "only the stretches before the op or call of this exact name");
  cmd->add_option("--host-gap-min-us", a->host_gaps.min_us,
                  "only stretches at least this long (default 100 us)")
      ->check(CLI::PositiveNumber);
  cmd->footer(
      "Writes DIR/what_if.json (measured_step_time_us, predicted_step_time_us, the new\n"
      "critical path) and DIR/predicted_path_iteration<K>.csv.");
  return [a] { return run_what_if(*a); };
}

}  // namespace jarvis::cli
