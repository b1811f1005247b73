// Per-iteration verdicts agree with the critical path (issue 73 point 6): on
// real traces of ../shared/ab_pairs whose steps run the same work, the
// iterations of about the same length carry one verdict, and that verdict is
// the side holding most of their paths' time, summed here from the path
// segments (the verdict's own model, recounted by its categories). The health
// block states the path shares the verdict stands on and lists host
// interference among its warnings. Steps and iterations are counted from the
// trace's raw ProfilerStep#N annotations.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "critical_path/critical_path.h"
#include "golden.h"
#include "insights/trace_health.h"
#include "report/stats.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;
namespace fs = std::filesystem;

// The segment categories of the path's host side (docs/critical-path.md:
// runtime calls, host gaps, launch latency, syncs, host input waits).
bool host_segment(std::string_view category) {
  return category == "host_runtime" || category == "host_gap" || category == "launch_latency" ||
         category == "sync" || category == "host_input";
}

struct PathSides {
  double gpu = 0, host = 0, communication = 0;
  void add(const cp::IterationResult& it) {
    for (const cp::Segment& s : it.path) {
      if (host_segment(s.category()))
        host += s.dur_us;
      else if (s.category() == "communication")
        communication += s.dur_us;
      else if (s.category() != "gpu_idle" && s.category() != "untraced" &&
               s.category() != "step_end")
        gpu += s.dur_us;
    }
  }
  std::string majority() const {
    if (communication > gpu && communication >= host) return "communication";
    return host > gpu ? "host" : "gpu";
  }
};

size_t raw_profiler_steps(const jarvis::Trace& t) {
  size_t n = 0;
  for (jarvis::Uid u = 0; u < t.events.size(); ++u)
    if (t.events[u].cat == jarvis::Cat::UserAnnotation && t.name(u).starts_with("ProfilerStep#"))
      ++n;
  return n;
}

TEST_CASE("critical path: iterations of one length share the verdict of their paths' majority") {
  // Traces whose near-identical steps were labelled gpu, host, gpu by their
  // own paths before (two nearly critical chains, host and GPU).
  for (const char* name :
       {"s_overhead_gpt2_plain", "s_vocab_B_vocab32064", "s_mask_sync_B_multiply_mask",
        "s_overhead_gpt2_shapes_stack", "s_layout_B_channels_last"}) {
    const std::string path = jarvis::golden::shared_dir() + "/ab_pairs/" + name + ".json.gz";
    if (!fs::exists(path)) {
      MESSAGE("skipped: " << path << " is missing");
      continue;
    }
    CAPTURE(name);
    const jarvis::Trace t = jarvis::load_trace(path);
    const jarvis::CallTree tree(t);
    const auto graph = cp::build_graph({{&t, &tree, -1}});
    for (const cp::Analysis& a : {cp::analyse(graph), cp::analyse_unprofiled(graph)}) {
      CAPTURE(a.model);
      REQUIRE(a.iterations.size() == raw_profiler_steps(t));
      std::vector<double> lengths;
      for (const auto& it : a.iterations) lengths.push_back(it.length_us);
      const double median = jarvis::stats::median(lengths);
      PathSides like_sides;
      std::vector<const cp::IterationResult*> like;
      for (const auto& it : a.iterations) {
        if (std::abs(it.length_us - median) <= 0.10 * median) {
          like.push_back(&it);
          like_sides.add(it);
        } else {
          PathSides own;  // an iteration of its own length: its own path decides
          own.add(it);
          CHECK(it.bound_by == own.majority());
        }
      }
      if (like.size() < 2) continue;
      for (const auto* it : like) {
        CAPTURE(it->name);
        CHECK(it->bound_by == like_sides.majority());
        PathSides own;
        own.add(*it);
        // An iteration whose own path leans the other way says so.
        if (own.majority() != it->bound_by)
          CHECK(it->bound_reason.find("own path leans " + own.majority()) != std::string::npos);
      }
    }
  }
}

TEST_CASE("trace health: the verdict with its path shares, and host interference warned") {
  const std::string path = jarvis::golden::shared_dir() + "/ab_pairs/s_overhead_gpt2_plain.json.gz";
  if (!fs::exists(path)) {
    MESSAGE("skipped: " << path << " is missing");
    return;
  }
  const jarvis::Trace t = jarvis::load_trace(path);
  const jarvis::CallTree tree(t);
  const auto health = jarvis::insights::trace_health(t, tree);
  const auto graph = cp::build_graph({{&t, &tree, -1}});
  const cp::Analysis a = cp::analyse_unprofiled(graph);
  PathSides sides;
  double length = 0;
  size_t host_bound = 0;
  for (const auto& it : a.iterations) {
    sides.add(it);
    length += it.length_us;
    host_bound += it.bound_by == "host";
  }
  REQUIRE(length > 0);
  CHECK(health.unprofiled_path_gpu_share == doctest::Approx(sides.gpu / length));
  CHECK(health.unprofiled_path_host_share == doctest::Approx(sides.host / length));
  CHECK(health.unprofiled_path_gpu_share + health.unprofiled_path_host_share +
            health.unprofiled_path_communication_share <=
        1.0 + 1e-9);
  CHECK(health.unprofiled_bound_by == (2 * host_bound > a.iterations.size() ? "host" : "gpu"));
  // Interference found by the un-profiled model is in the health block and
  // its warnings, naming the iteration, not only in critical_path's text.
  size_t noted = 0;
  for (const std::string& note : a.notes)
    if (note.starts_with(cp::kInterferenceNote)) ++noted;
  CHECK(health.interference.size() == noted);
  REQUIRE(noted > 0);  // this trace's steps ran with longer host gaps than the fastest one
  for (const std::string& note : health.interference) {
    CHECK(note.find("ProfilerStep#") != std::string::npos);
    CHECK(std::find(health.warnings.begin(), health.warnings.end(), note) != health.warnings.end());
  }
  const auto j = jarvis::insights::to_json(health);
  CHECK(j["interference"].size() == noted);
  CHECK(j["unprofiled_path_host_share"].get<double>() == doctest::Approx(sides.host / length));
}

TEST_CASE("what-if summary: no share of the removed time above 100 %") {
  const std::string path =
      jarvis::golden::shared_dir() + "/ab_pairs/s_mask_sync_A_boolean_index.json.gz";
  if (!fs::exists(path)) {
    MESSAGE("skipped: " << path << " is missing");
    return;
  }
  const cp::Loaded l = cp::load_graph({path});
  // Removing a sync lets the host run ahead: the step may shrink by more
  // than the time taken out, which the line says without a share over 100 %.
  for (const bool waits_only : {false, true})
    for (const char* op : {"aten::nonzero", "aten::item", "cudaStreamSynchronize"}) {
      CAPTURE(op);
      CAPTURE(waits_only);
      cp::Scenario sc;
      cp::HostRemoval rm;
      rm.ops = {op};
      rm.waits_only = waits_only;
      try {
        cp::add_host_removal(l, rm, sc);
      } catch (const std::exception&) {
        continue;  // nothing of that name in this trace
      }
      const cp::WhatIfResult r = cp::what_if(l.graph, sc);
      const double saved = r.measured_step_time_us - r.predicted_step_time_us;
      CAPTURE(r.summary);
      size_t at = 0;
      while ((at = r.summary.find("% of the", at)) != std::string::npos) {
        size_t from = at;
        while (from > 0 && (std::isdigit(static_cast<unsigned char>(r.summary[from - 1])) ||
                            r.summary[from - 1] == '.'))
          --from;
        if (from < at) CHECK(std::stod(r.summary.substr(from, at - from)) <= 100.0);
        at += 8;
      }
      if (r.removed_us > 0 && saved > r.removed_us)
        CHECK(r.summary.find("saves more per step than") != std::string::npos);
    }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
