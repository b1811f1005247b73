// channels_last, the whole change (issue 73 point 4, issue 73's A/B table):
// the layout conversions cuDNN runs around NCHW convolutions go whole, each
// with the launch call that issued it on the host, not only their GPU time.
// Once the step turns host-bound (../shared/ab_pairs s_layout A after the
// change), those launches are step time. Expectations come from the raw
// events (the conversion kernels and their launch calls, matched by
// correlation id) and truth.json; the replays are the critical path's what-if.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "critical_path/critical_path.h"
#include "golden.h"
#include "insights/insights.h"
#include "perf/gpu_arch.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;
namespace in = jarvis::insights;
namespace fs = std::filesystem;
using nlohmann::json;

std::string ab(const std::string& file) {
  return jarvis::golden::shared_dir() + "/ab_pairs/" + file;
}

bool is_conversion(const std::string& name) {
  return name.find("nchwToNhwc") != std::string::npos ||
         name.find("nhwcToNchw") != std::string::npos;
}

// The raw trace's layout conversions and the runtime calls that launched
// them (by correlation id): their start times and recorded host time.
struct RawConversions {
  size_t kernels = 0;
  std::set<double> launch_ts;
  double launch_us = 0;
  size_t steps = 0;
};

RawConversions raw_conversions(const std::string& file) {
  const json raw = json::parse(jarvis::loader_test::gunzip_file(ab(file)));
  std::set<int64_t> correlations;
  RawConversions out;
  for (const auto& e : raw["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", ""), name = e.value("name", "");
    if (cat == "user_annotation" && name.starts_with("ProfilerStep#")) ++out.steps;
    if (cat != "kernel" || !is_conversion(name)) continue;
    ++out.kernels;
    if (e.contains("args") && e["args"].contains("correlation"))
      correlations.insert(e["args"]["correlation"].get<int64_t>());
  }
  for (const auto& e : raw["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if (e.value("ph", "") != "X" || (cat != "cuda_runtime" && cat != "cuda_driver")) continue;
    if (!e.contains("args") || !e["args"].contains("correlation")) continue;
    if (!correlations.count(e["args"]["correlation"].get<int64_t>())) continue;
    out.launch_ts.insert(e["ts"].get<double>());
    out.launch_us += e["dur"].get<double>();
  }
  return out;
}

// The step saving of a scenario on the un-profiled model, per step.
double saving_ms(const cp::Graph& g, const cp::Scenario& sc) {
  const cp::WhatIfResult r = cp::what_if(g, sc);
  return std::max(0.0, r.measured_step_time_us - r.predicted_step_time_us) / 1e3;
}

TEST_CASE("channels_last takes each layout conversion's launch with it (s_layout A, raw events)") {
  if (!fs::exists(ab("truth.json"))) {
    MESSAGE("skipped: ../shared/ab_pairs is missing");
    return;
  }
  const json truth = json::parse(std::ifstream(ab("truth.json")))["s_layout"];
  const std::string a_file = truth["A_nchw"]["trace"].get<std::string>();
  const RawConversions raw_a = raw_conversions(a_file);
  const RawConversions raw_b =
      raw_conversions(truth["B_channels_last"]["trace"].get<std::string>());
  // The re-run with channels_last has no conversion left: the change removes
  // them whole. Three of A's were queued before profiling (no launch in the
  // trace); every other one has its launch call.
  REQUIRE(raw_a.kernels > 0);
  CHECK(raw_b.kernels == 0);
  REQUIRE(raw_a.launch_ts.size() + 3 == raw_a.kernels);

  const jarvis::Trace t = jarvis::load_trace(ab(a_file));
  const jarvis::CallTree tree(t);
  static const auto arch = jarvis::perf::load_gpu_arch("H200");
  const auto found = in::run_insights(in::make_context(t, tree, &arch));
  const auto conv = std::find_if(found.begin(), found.end(), [](const in::Insight& i) {
    return i.rule == "conv_layout_transposes";
  });
  REQUIRE(conv != found.end());
  REQUIRE(conv->what_if.contains("remove_uids"));
  REQUIRE(conv->what_if.contains("kernel_uids"));
  // Its what-if removes exactly the raw launch calls of the conversions...
  const auto removed = conv->what_if["remove_uids"].get<std::vector<jarvis::Uid>>();
  CHECK(removed.size() == raw_a.launch_ts.size());
  CHECK(conv->evidence["conversion_launches"].get<size_t>() == raw_a.launch_ts.size());
  size_t matched = 0;
  for (jarvis::Uid u : removed) {
    REQUIRE(u < t.events.size());
    CHECK(t.events[u].is_runtime());
    const auto near = raw_a.launch_ts.lower_bound(t.events[u].ts() - 1e-3);
    matched += near != raw_a.launch_ts.end() && std::abs(*near - t.events[u].ts()) < 1e-3;
  }
  CHECK(matched == removed.size());
  // ... and scales no conversion it removes (the norms, and the conversions
  // queued before profiling, are the scaled kernels).
  const auto scaled = conv->what_if["kernel_uids"].get<std::vector<jarvis::Uid>>();
  size_t scaled_conversions = 0;
  for (jarvis::Uid u : scaled) scaled_conversions += is_conversion(std::string(t.name(u)));
  CHECK(scaled_conversions == raw_a.kernels - raw_a.launch_ts.size());

  // Against the same change without the launches (the conversions' GPU work
  // gone, their launch calls kept): removing the launches saves more, at most
  // their recorded host time a step.
  const std::vector<cp::RankInput> inputs{{&t, &tree, -1}};
  const cp::Graph g = cp::build_graph(inputs);
  cp::Scenario whole;
  whole.select.gpu_uids = scaled;
  whole.factor = conv->what_if["factor"].get<double>();
  cp::HostRemoval launches;
  launches.uids = removed;
  cp::add_host_removal(inputs, g, launches, whole);
  cp::Scenario gpu_only;
  gpu_only.select.gpu_uids = scaled;
  gpu_only.factor = whole.factor;
  gpu_only.remove_gpu = whole.remove_gpu;  // the conversions' kernels, launches kept
  REQUIRE(gpu_only.remove_gpu.size() == removed.size());
  const double with_launches = saving_ms(g, whole), without = saving_ms(g, gpu_only);
  const double steps = static_cast<double>(raw_a.steps);
  CAPTURE(with_launches);
  CAPTURE(without);
  CHECK(with_launches > without);
  CHECK(with_launches - without <= raw_a.launch_us / steps / 1e3);
  // The finding's step saving is that replay (one figure per change), and
  // it is nearer the re-runs' difference than the GPU-only one.
  const double per_step = conv->step_saving_us.value_or(0) / static_cast<double>(conv->steps) / 1e3;
  CHECK(per_step == doctest::Approx(with_launches).epsilon(1e-3));
  const double measured = truth["A_nchw"]["step_ms_clean"].get<double>() -
                          truth["B_channels_last"]["step_ms_clean"].get<double>();
  CAPTURE(measured);
  CHECK(std::abs(measured - with_launches) < std::abs(measured - without));
  CHECK(with_launches >= 0.5 * measured);
  CHECK(with_launches <= 2 * measured);
  MESSAGE("s_layout A: channels_last " << with_launches << " ms/step with the conversions' "
                                       << removed.size() << " launches, " << without
                                       << " without them; measured " << measured);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
