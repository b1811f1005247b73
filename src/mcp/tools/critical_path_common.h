// Shared by the critical_path and what_if adapters: load the confined
// traces into a graph, prepare and mark the output directory, summarise.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "engine/engine.h"
#include "mcp/tool.h"
#include "mcp/tools/trace_arg.h"

namespace jarvis::mcp::cp_tools {

// The ranks' graph and the memory it holds, counted against the server's
// --max-memory while the call runs.
struct ReservedRanks : engine::RankGraph {
  TraceCache::Reservation reservation;
};

// Every rank trace is held at once: their estimated parse is reserved in the
// shared trace cache's budget before the first one is parsed, so a call over
// too many (or too large) traces is refused instead of spending the memory.
inline TraceCache::Reservation reserve_ranks(ToolContext& ctx,
                                             const std::vector<std::string>& paths,
                                             bool all_at_once) {
  uint64_t total = 0, largest = 0;
  for (const auto& p : paths) {
    uint64_t bytes = estimate_trace_bytes_before_parse(p);
    total += bytes;
    largest = std::max(largest, bytes);
  }
  try {
    return ctx.traces().cache().reserve(
        all_at_once ? total : largest,
        fmt::format("{} rank trace{}", paths.size(), paths.size() == 1 ? "" : "s"));
  } catch (const TraceError& e) {
    throw ToolError(e.what());
  }
}

// The job a call is about: the ranks' traces parsed for it ("traces"), or a
// loaded trace ("trace": its handle, a one-trace job; its parse and call
// tree are the handle's, shared with the other tools).
struct JobGraph {
  std::optional<ReservedRanks> ranks;
  std::shared_ptr<const LoadedTrace> entry;
  std::shared_ptr<const CallTree> tree;
  std::shared_ptr<const engine::CriticalPathGraph> entry_graph;
  // A loaded trace's step model (load_trace builds it for the health block,
  // before any worker is forked): its graph is entry_graph, with the what-if
  // base attached, and its analyses are the critical_path tool's. Null for
  // ranks, or when the trace gives no step model (entry_graph is then built
  // alone, and says why it cannot be).
  std::shared_ptr<const engine::StepModelRef> step;

  const engine::CriticalPathGraph& graph() const { return ranks ? ranks->graph : *entry_graph; }
  engine::HostRemovalMatch add_host_removal(const engine::HostRemoval& rm,
                                            engine::WhatIfScenario& sc) const {
    if (ranks) return engine::add_host_removal(*ranks, rm, sc);
    return engine::add_host_removal({{&entry->trace(), tree.get(), -1}}, *entry_graph, rm, sc);
  }
};

inline ReservedRanks load_ranks(const json& args, ToolContext& ctx) {
  std::vector<std::string> paths;
  for (const auto& p : args.at("traces"))
    paths.push_back(ctx.paths().trace_path(p.get<std::string>()).string());
  TraceCache::Reservation reservation = reserve_ranks(ctx, paths, /*all_at_once=*/true);
  auto progress = [&ctx](size_t done, size_t total) {
    ctx.report_progress(static_cast<double>(done), static_cast<double>(total + 1),
                        fmt::format("{} of {} traces loaded", done, total));
    return !ctx.cancelled();
  };
  try {
    engine::RankGraph loaded = engine::load_graph(paths, progress);
    // Each rank's health, as every analysis result carries it.
    for (size_t k = 0; k < loaded.traces.size() && k < paths.size(); ++k)
      ctx.add_trace_caveats(
          paths[k],
          json(engine::to_json(engine::trace_health(*loaded.traces[k], *loaded.trees[k]))));
    return ReservedRanks{std::move(loaded), std::move(reservation)};
  } catch (const engine::CriticalPathError& e) {
    throw ToolError(e.what());
  } catch (const engine::CollectiveError& e) {
    throw ToolError(fmt::format("the ranks' collectives cannot be matched: {}", e.what()));
  } catch (const TraceError& e) {
    throw ToolError(e.what());
  }
}

// "trace" or "traces", exactly one of them.
inline JobGraph load_job(const json& args, ToolContext& ctx) {
  const bool one = args.contains("trace"), several = args.contains("traces");
  if (one == several)
    throw ToolError(
        "give either trace (a load_trace handle) or traces (the paths of one job's ranks)");
  JobGraph job;
  if (several) {
    job.ranks.emplace(load_ranks(args, ctx));
    return job;
  }
  job.entry = trace_arg(args, ctx);
  job.tree = engine::trace_call_tree(*job.entry);
  try {
    // The step model's graph (the same build_graph of the trace) and its
    // base, not a second graph of the trace.
    job.step = loaded_step_model(*job.entry);
    if (job.step->model) {
      job.entry_graph =
          std::shared_ptr<const engine::CriticalPathGraph>(job.step, &job.step->model->graph);
      return job;
    }
    job.step = nullptr;
    job.entry_graph = engine::trace_graph(*job.entry);
  } catch (const engine::CriticalPathError& e) {
    throw ToolError(e.what());
  } catch (const engine::CollectiveError& e) {
    throw ToolError(fmt::format("the trace's collectives cannot be matched: {}", e.what()));
  }
  return job;
}

inline std::string out_dir(const json& args, ToolContext& ctx) {
  if (!args.contains("output_dir")) return "";
  return ctx.output_dir(args.at("output_dir").get<std::string>(), args.at("overwrite").get<bool>())
      .string();
}

inline json write_files(ToolContext& ctx, const std::string& dir,
                        const std::function<std::vector<std::string>()>& writer) {
  if (dir.empty()) return json::array();
  try {
    json files = writer();
    ctx.paths().mark_output_dir(dir);
    return files;
  } catch (const std::runtime_error& e) {
    throw ToolError(fmt::format("cannot write the results to {}: {}", dir, e.what()));
  }
}

inline std::string top_text(const json& result) {
  std::string text;
  for (const auto& c : result["contributors"])
    text += fmt::format("  {:5.1f}%  rank {} {} {} {}\n", 100 * c["share"].get<double>(),
                        c["rank"].get<int64_t>(), c["category"].get<std::string>(),
                        c["op"].get<std::string>(), c["kernel"].get<std::string>().substr(0, 80));
  for (const auto& w : result["waits"])
    text += fmt::format("  rank {} waits {:.1f} us per iteration for rank {}\n",
                        w["rank"].get<int64_t>(), w["time_us"].get<double>(),
                        w["waiting_for_rank"].get<int64_t>());
  for (const auto& n : result["notes"]) text += "  note: " + n.get<std::string>() + "\n";
  return text;
}

}  // namespace jarvis::mcp::cp_tools
