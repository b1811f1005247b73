// One figure per change (issue 73 point 4), on every Kineto trace of
// ../shared (ab_pairs, hw_pairs, conformance, legacy): every finding with a
// step saving carries the what_if arguments that replay it, and replaying
// them here, through the critical path's own API on a graph this test
// builds, gives the finding's saving per step (rounding: 0.5 us or 0.1 %,
// whichever is larger); the saving never exceeds what that what-if takes
// out of a step (its removed time, syncs' waits included), and an attention
// finding's saving never exceeds its own recoverable time.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "critical_path/critical_path.h"
#include "critical_path/host_gaps.h"
#include "golden.h"
#include "insights/insights.h"
#include "perf/gpu_arch.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;
namespace in = jarvis::insights;
namespace fs = std::filesystem;
using nlohmann::json;

// The what_if tool's arguments as its MCP adapter reads them.
cp::Scenario scenario_of(const json& args, const std::vector<cp::RankInput>& inputs,
                         const cp::Graph& graph) {
  cp::Scenario sc;
  if (args.contains("kernel_uids")) {
    sc.select.gpu_uids = args["kernel_uids"].get<std::vector<jarvis::Uid>>();
    sc.factor = args.value("factor", 1.0);
  }
  sc.remove_launch_gaps = args.value("remove_launch_gaps", false);
  cp::HostRemoval rm;
  if (args.contains("remove_ops")) rm.ops = args["remove_ops"].get<std::vector<std::string>>();
  if (args.contains("remove_uids")) rm.uids = args["remove_uids"].get<std::vector<jarvis::Uid>>();
  rm.python_frame = args.value("remove_python_frame", "");
  rm.waits_only = args.value("remove_waits_only", false);
  if (!rm.empty()) cp::add_host_removal(inputs, graph, rm, sc);
  if (args.contains("remove_host_gaps")) {
    cp::HostGapSelector sel;
    sel.after = args["remove_host_gaps"].value("after", "");
    sel.before = args["remove_host_gaps"].value("before", "");
    sel.min_us = args["remove_host_gaps"].value("min_us", 100.0);
    cp::add_host_gap_removal(inputs, graph, sel, sc);
  }
  return sc;
}

// The GPU idle after each sync call returns, until the next GPU op starts
// (the trace's own kernel, copy and set events).
double idle_after(const jarvis::Trace& t,
                  const std::vector<std::pair<int64_t, jarvis::Uid>>& syncs) {
  if (syncs.empty()) return 0;
  std::vector<std::pair<double, double>> gpu;
  for (const auto& e : t.events)
    if (e.is_gpu() && e.has_ts() && e.has_dur()) gpu.emplace_back(e.ts(), e.end());
  std::sort(gpu.begin(), gpu.end());
  std::set<jarvis::Uid> seen;
  double idle = 0;
  for (const auto& s : syncs) {
    if (!seen.insert(s.second).second) continue;
    const double end = t.events[s.second].end();
    double busy_until = end;  // GPU work still running when the call returned
    for (const auto& [a, b] : gpu)
      if (a < end && b > busy_until) busy_until = b;
    auto next = std::lower_bound(gpu.begin(), gpu.end(), std::make_pair(busy_until, -1e300));
    if (next != gpu.end()) idle += next->first - busy_until;
  }
  return idle;
}

TEST_CASE("one figure per change: each finding's what_if replays its step saving") {
  const auto traces = jarvis::golden::shared_kineto_traces();
  if (traces.empty()) {
    MESSAGE("skipped: ../shared is missing");
    return;
  }
  static const auto arch = jarvis::perf::load_gpu_arch("H200");
  size_t replayed = 0;
  std::set<std::string> rules;
  for (const std::string& path : traces) {
    CAPTURE(path);
    const jarvis::Trace t = jarvis::load_trace(path);
    const jarvis::CallTree tree(t);
    const std::vector<cp::RankInput> inputs{{&t, &tree, -1}};
    std::optional<cp::Graph> graph;
    try {
      graph = cp::build_graph(inputs);
    } catch (const std::runtime_error&) {
      continue;  // no dependency graph: no step savings either
    }
    const auto found = in::run_insights(in::make_context(t, tree, &arch));
    for (const auto& i : found) {
      if (!i.step_saving_us) continue;
      CAPTURE(i.rule);
      CAPTURE(i.title);
      const double steps = static_cast<double>(std::max<size_t>(1, i.steps));
      const double saving = *i.step_saving_us / steps;
      // A GPU change whose step saving falls well short of its recoverable
      // time says why (host-bound, turns host-bound, off the path).
      if (i.scope != "trace" && i.recoverable_us && i.what_if.is_object() &&
          i.what_if.contains("kernel_uids") && *i.step_saving_us < 0.75 * *i.recoverable_us - 1.0)
        CHECK_FALSE(i.step_saving_note.empty());
      if (i.rule.find("attention") != std::string::npos && i.recoverable_us)
        CHECK(*i.step_saving_us / steps <= *i.recoverable_us / steps * (1 + 1e-3) + 0.5);
      if (i.what_if.is_null()) {
        // Only a JAX step run op by op is sized without a what-if: no
        // what-if replays a jit (its note gives the CUDA graph's figure).
        CHECK(i.rule == "launch_bound");
        CHECK(i.evidence.contains("op_by_op"));
        continue;
      }
      CAPTURE(i.what_if.dump().substr(0, 300));
      const cp::Scenario sc = scenario_of(i.what_if, inputs, *graph);
      const cp::WhatIfResult r = cp::what_if(*graph, sc);
      const double replay = std::max(0.0, r.measured_step_time_us - r.predicted_step_time_us);
      CHECK(replay == doctest::Approx(saving).epsilon(1e-3).scale(500.0));
      // What the what-if takes out (removed_us: the work it removes and the
      // syncs' waits on the un-profiled schedule), and the GPU idle behind
      // each sync that no longer waits (the GPU drained, then waited for the
      // host's next launch), from the trace's GPU events.
      const double iterations = static_cast<double>(graph->iterations.size());
      const double behind = idle_after(t, sc.remove_syncs) / iterations;
      CHECK(saving <= r.removed_us + behind + 0.5);
      rules.insert(i.rule);
      ++replayed;
    }
  }
  MESSAGE(replayed << " findings replayed, rules: " << rules.size());
  CHECK(replayed > 50);
  for (const std::string rule : {"unfused_attention", "activation_recompute", "host_sync",
                                 "unrecorded_host_time", "dataloader_main_process"})
    CHECK(rules.count(rule) == 1);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
