// Host time no op records (issue 73 point 3): the stretches of a step where
// no host thread records an event, the finding that sizes them and the
// what-if that takes them out. Expectations come from the raw events of
// ../shared/ab_pairs traces, read here with nlohmann::json: the stretches
// between two recorded host events inside each ProfilerStep (the step's two
// ends left out), their length per step, where they fall and the GPU idle in
// them from the raw GPU events.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "critical_path/critical_path.h"
#include "critical_path/host_gaps.h"
#include "golden.h"
#include "insights/insights.h"
#include "mcp_harness.h"
#include "perf/gpu_arch.h"
#include "raw_decode_steps.h"
#include "raw_timeline.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;
namespace in = jarvis::insights;
using nlohmann::json;

std::string ab(const std::string& file) {
  return jarvis::golden::shared_dir() + "/ab_pairs/" + file;
}

// A stretch found in the raw events.
struct RawStretch {
  size_t step = 0;
  double offset_us = 0, dur_us = 0, gpu_idle_us = 0;
  std::string after, before;  // outermost cpu_op around the events on each side, else the event
};

struct RawHost {
  double ts = 0, end = 0;
  std::string name, thread;
};

// Every stretch of at least `min_us` inside a ProfilerStep where no cpu_op,
// runtime call or DataLoader __next__ of any thread is recorded, between two
// such events (the step's two ends left out), with the raw GPU idle in it.
// `windows`: these host windows instead of the ProfilerSteps (the decode
// steps of a generate() trace, whose iterations they are).
std::vector<RawStretch> raw_stretches(const std::string& file, double min_us,
                                      const jarvis::testing::Intervals* windows = nullptr) {
  const json raw = json::parse(jarvis::loader_test::gunzip_file(ab(file)));
  std::vector<RawHost> host, ops;
  std::vector<std::pair<double, double>> steps;
  jarvis::testing::Intervals gpu;
  for (const auto& e : raw["traceEvents"]) {
    if (e.value("ph", "") != "X" || !e.contains("dur")) continue;
    const std::string cat = e.value("cat", ""), name = e.value("name", "");
    const double ts = e["ts"].get<double>(), end = ts + e["dur"].get<double>();
    const std::string thread = e["pid"].dump() + "/" + e["tid"].dump();
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") gpu.emplace_back(ts, end);
    if (cat == "user_annotation" && name.starts_with("ProfilerStep#")) steps.emplace_back(ts, end);
    const bool loader = cat == "user_annotation" && name.find("DataLoader") != std::string::npos &&
                        name.find("__next__") != std::string::npos;
    if (cat == "cpu_op" || cat == "cuda_runtime" || cat == "cuda_driver" || loader)
      host.push_back({ts, end, name, thread});
    if (cat == "cpu_op") ops.push_back({ts, end, name, thread});
  }
  std::sort(host.begin(), host.end(),
            [](const RawHost& a, const RawHost& b) { return a.ts < b.ts; });
  std::sort(steps.begin(), steps.end());
  if (windows) steps = *windows;
  const jarvis::testing::Intervals busy = [&] {
    std::sort(gpu.begin(), gpu.end());
    jarvis::testing::Intervals merged;
    for (const auto& [a, b] : gpu)
      if (!merged.empty() && a <= merged.back().second)
        merged.back().second = std::max(merged.back().second, b);
      else
        merged.emplace_back(a, b);
    return merged;
  }();
  const auto outermost = [&](const RawHost& h) {
    const RawHost* top = nullptr;
    for (const RawHost& o : ops)
      if (o.thread == h.thread && o.ts <= h.ts && o.end >= h.end && (!top || o.ts < top->ts))
        top = &o;
    return top ? top->name : h.name;
  };
  std::vector<RawStretch> out;
  for (size_t s = 0; s < steps.size(); ++s) {
    const auto [from, to] = steps[s];
    const RawHost* last = nullptr;
    double last_end = -1e300;
    for (const RawHost& h : host) {
      if (h.ts >= to || h.end <= from) continue;
      if (last && h.ts - last_end >= min_us && last_end >= from) {
        RawStretch r;
        r.step = s;
        r.offset_us = last_end - from;
        r.dur_us = h.ts - last_end;
        double busy_us = 0;
        for (const auto& [a, b] : busy)
          busy_us += std::max(0.0, std::min(h.ts, b) - std::max(last_end, a));
        r.gpu_idle_us = r.dur_us - busy_us;
        r.after = outermost(*last);
        r.before = outermost(h);
        out.push_back(r);
      }
      if (h.end > last_end) {
        last_end = h.end;
        last = &h;
      }
    }
  }
  return out;
}

struct Loaded1 {
  jarvis::Trace trace;
  std::unique_ptr<jarvis::CallTree> tree;
  cp::Graph graph;
  std::vector<cp::RankInput> inputs() const { return {{&trace, tree.get(), -1}}; }
};

std::unique_ptr<Loaded1> load(const std::string& file) {
  auto l = std::make_unique<Loaded1>();
  l->trace = jarvis::load_trace(ab(file));
  l->tree = std::make_unique<jarvis::CallTree>(l->trace);
  l->graph = cp::build_graph(l->inputs());
  return l;
}

TEST_SUITE("insights") {
  TEST_CASE("host time no op records: the stretches are the raw trace's (s_generate A)") {
    const std::string file = "s_generate_A_gpt2.json.gz";
    if (!std::filesystem::exists(ab(file))) {
      MESSAGE("skipped: ../shared/ab_pairs is missing");
      return;
    }
    // Each ProfilerStep holds one generate() call: its decode steps are the
    // iterations (issue 73 point 10), so the stretches are those inside the
    // decode steps found in the raw launches; the call's set-up and prefill
    // lie outside them.
    const auto decode = jarvis::testing::raw_decode::decode_windows(
        jarvis::testing::raw_decode::read_raw(ab(file)));
    REQUIRE(decode.size() > 3);
    const auto raw = raw_stretches(file, 100, &decode);
    auto l = load(file);
    REQUIRE(l->graph.iterations.size() == decode.size());
    cp::HostGapSelector sel;
    const auto gaps = cp::unrecorded_host_gaps(l->inputs(), l->graph, sel);
    REQUIRE(raw.size() > 10);  // HF generate(): its Python between the decode steps' ops
    CHECK(gaps.size() == raw.size());
    double raw_us = 0, us = 0;
    for (const auto& r : raw) raw_us += r.dur_us;
    for (const auto& g : gaps) us += g.dur();
    CHECK(us == doctest::Approx(raw_us).epsilon(1e-6));
    // The longest stretch, where it falls in its decode step and between what.
    const auto longest_raw = *std::max_element(
        raw.begin(), raw.end(),
        [](const RawStretch& a, const RawStretch& b) { return a.dur_us < b.dur_us; });
    const auto longest = *std::max_element(
        gaps.begin(), gaps.end(),
        [](const cp::HostGap& a, const cp::HostGap& b) { return a.dur() < b.dur(); });
    CHECK(longest.dur() == doctest::Approx(longest_raw.dur_us).epsilon(1e-6));
    CHECK(longest.offset_us == doctest::Approx(longest_raw.offset_us).epsilon(1e-6));
    CHECK(longest.after_name == longest_raw.after);
    CHECK(longest.before_name == longest_raw.before);

    // The place (after, before) holding the most stretch time in the raw
    // events: its finding's size per decode step from the raw stretches, the
    // GPU idle in them, and its what-if replayed gives its step saving.
    std::map<std::pair<std::string, std::string>, double> by_place;
    for (const auto& r : raw) by_place[{r.after, r.before}] += r.dur_us;
    const auto top =
        std::max_element(by_place.begin(), by_place.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    const std::string top_after = top->first.first, top_before = top->first.second;
    static const auto arch = jarvis::perf::load_gpu_arch("H200");
    const auto found = in::run_insights(in::make_context(l->trace, *l->tree, &arch));
    const in::Insight* f = nullptr;
    for (const auto& i : found)
      if (i.rule == "unrecorded_host_time" && i.evidence["after"] == top_after &&
          i.evidence["before"] == top_before)
        f = &i;
    CAPTURE(top_after);
    CAPTURE(top_before);
    REQUIRE(f);
    CAPTURE(f->title);
    double place_us = 0, place_idle = 0;
    size_t place_n = 0;
    for (const auto& r : raw)
      if (r.after == top_after && r.before == top_before) {
        place_us += r.dur_us;
        place_idle += r.gpu_idle_us;
        ++place_n;
      }
    const double steps = static_cast<double>(f->steps);
    CHECK(f->steps == decode.size());
    CHECK(f->evidence["stretches"].get<size_t>() == place_n);
    CHECK(f->evidence["host_us_per_step_recorded_mean"].get<double>() ==
          doctest::Approx(place_us / steps).epsilon(1e-6));
    CHECK(f->evidence["gpu_idle_us_per_step_recorded"].get<double>() ==
          doctest::Approx(place_idle / steps).epsilon(1e-3));
    // No ops and no python frames inside: the un-profiled stretch is the recorded one.
    CHECK(f->evidence["host_us_per_step_unprofiled_mean"].get<double>() ==
          doctest::Approx(place_us / steps).epsilon(1e-6));
    const auto& args = f->what_if["remove_host_gaps"];
    cp::HostGapSelector replay;
    replay.after = args["after"].get<std::string>();
    replay.before = args["before"].get<std::string>();
    replay.min_us = args["min_us"].get<double>();
    cp::Scenario sc;
    cp::add_host_gap_removal(l->inputs(), l->graph, replay, sc);
    const cp::WhatIfResult r = cp::what_if(l->graph, sc);
    const double saving = r.measured_step_time_us - r.predicted_step_time_us;
    REQUIRE(f->step_saving_us);
    CHECK(saving == doctest::Approx(*f->step_saving_us / steps).epsilon(1e-9));
    // A host-bound generate(): the GPU idles through the stretch, so taking
    // it out saves about its length, never more than it.
    CHECK(saving <= place_us / steps + 1.0);
    CHECK(saving >= 0.5 * place_idle / steps);
  }

  TEST_CASE("host time no op records over MCP: the finding's what_if replays its saving") {
    // The what_if tool takes the finding's arguments as they are (the trace
    // is the handle): its saving per step is the finding's.
    const std::string file = "s_generate_A_gpt2.json.gz";
    if (!std::filesystem::exists(ab(file))) {
      MESSAGE("skipped: ../shared/ab_pairs is missing");
      return;
    }
    jarvis::mcp::testing::Harness h;
    h.initialize();
    json loaded = h.tool_result(1, "load_trace", {{"path", ab(file)}});
    json found = h.tool_result(
        2, "insights",
        {{"trace", loaded["trace"]}, {"rule", "unrecorded_host_time"}, {"detail", "full"}});
    REQUIRE(found["insights"].size() >= 1);
    for (const json& finding : found["insights"]) {
      CAPTURE(finding["title"].get<std::string>());
      json call = finding["what_if"];
      REQUIRE(call.contains("remove_host_gaps"));
      call["trace"] = loaded["trace"];
      call["detail"] = "summary";
      json r = h.tool_result(3, "what_if", call);
      CHECK(r["saved_us"].get<double>() ==
            doctest::Approx(finding["step_saving_us_per_step"].get<double>()).epsilon(1e-3));
    }
    // A selection that matches nothing is refused with what the trace has.
    json none = h.call_tool(
        4, "what_if", {{"trace", loaded["trace"]}, {"remove_host_gaps", {{"after", "x::y"}}}});
    CHECK(none["result"]["isError"] == true);
    CHECK(none["result"]["content"][0]["text"].get<std::string>().find("the longest") !=
          std::string::npos);
  }

  TEST_CASE("host time no op records: none where the raw events have no stretch") {
    static const auto arch = jarvis::perf::load_gpu_arch("H200");
    // A batch-1 decoder step: no stretch of 100 us between two recorded events.
    const std::string file = "s_overhead_decode_plain.json.gz";
    if (!std::filesystem::exists(ab(file))) {
      MESSAGE("skipped: ../shared/ab_pairs is missing");
      return;
    }
    CHECK(raw_stretches(file, 100).empty());
    auto l = load(file);
    CHECK(cp::unrecorded_host_gaps(l->inputs(), l->graph, {}).empty());
    const auto found = in::run_insights(in::make_context(l->trace, *l->tree, &arch));
    for (const auto& i : found) CHECK(i.rule != "unrecorded_host_time");
    // The what-if refuses a removal that matches nothing, saying why.
    cp::Scenario sc;
    cp::HostGapSelector sel;
    sel.after = "aten::ones_like";
    CHECK_THROWS_WITH_AS(cp::add_host_gap_removal(l->inputs(), l->graph, sel, sc),
                         doctest::Contains("no host time of at least 100 us"),
                         cp::CriticalPathError);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
