// What a what-if takes out per iteration (WhatIfResult::removed_us, issue 73
// point 4's leftover): everything the scenario removes inside the
// iterations, on the schedule it starts from: scaled GPU time, removed GPU
// ops, removed host spans (the gaps and runtime calls inside them) and the
// waits of the syncs that no longer wait, never work outside the iterations.
// Expectations come from the raw JSON events of ../shared/ab_pairs
// (s_mask_sync_A_boolean_index: two nonzero syncs a step; s_attn_A_eager_attention:
// a cudaDeviceSynchronize outside its three ProfilerSteps), read here with
// nlohmann::json.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "critical_path/critical_path.h"
#include "golden.h"
#include "raw_timeline.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;
using jarvis::testing::Intervals;
using nlohmann::json;

namespace {

struct RawEvent {
  std::string name, cat, thread;
  double ts = 0, end = 0;
  long long corr = -1;
};

// The raw trace: its complete events, the iteration windows (each
// ProfilerStep from its start to its end or the end of the last GPU op
// launched inside it, if later: a window may reach into the next step's),
// and the GPU ops by their launch's correlation.
struct Raw {
  std::vector<RawEvent> events;
  Intervals windows;
  std::multimap<long long, const RawEvent*> gpu_by_corr;

  bool inside(double t) const {
    return std::any_of(windows.begin(), windows.end(),
                       [&](const auto& w) { return t >= w.first - 1e-3 && t < w.second - 1e-3; });
  }
  static bool gpu(const RawEvent& e) {
    return e.cat == "kernel" || e.cat == "gpu_memcpy" || e.cat == "gpu_memset";
  }
  static bool runtime(const RawEvent& e) {
    return e.cat == "cuda_runtime" || e.cat == "cuda_driver";
  }
};

Raw read_raw(const std::string& path) {
  const json raw = json::parse(jarvis::loader_test::gunzip_file(path));
  Raw r;
  for (const auto& e : raw["traceEvents"]) {
    if (e.value("ph", "") != "X" || !e.contains("dur") || !e.contains("ts")) continue;
    RawEvent ev;
    ev.name = e.value("name", "");
    ev.cat = e.value("cat", "");
    ev.thread = e["pid"].dump() + "/" + e["tid"].dump();
    ev.ts = e["ts"].get<double>();
    ev.end = ev.ts + e["dur"].get<double>();
    if (e.contains("args") && e["args"].contains("correlation"))
      ev.corr = e["args"]["correlation"].get<long long>();
    r.events.push_back(std::move(ev));
  }
  for (const RawEvent& e : r.events)
    if (Raw::gpu(e) && e.corr >= 0) r.gpu_by_corr.emplace(e.corr, &e);
  std::vector<const RawEvent*> steps;
  for (const RawEvent& e : r.events)
    if (e.cat == "user_annotation" && e.name.starts_with("ProfilerStep#")) steps.push_back(&e);
  std::sort(steps.begin(), steps.end(),
            [](const RawEvent* a, const RawEvent* b) { return a->ts < b->ts; });
  for (const RawEvent* s : steps) {
    double end = s->end;
    for (const RawEvent& c : r.events) {
      if (!Raw::runtime(c) || c.corr < 0 || c.ts < s->ts || c.ts >= s->end) continue;
      auto [lo, hi] = r.gpu_by_corr.equal_range(c.corr);
      for (auto it = lo; it != hi; ++it) end = std::max(end, it->second->end);
    }
    r.windows.emplace_back(s->ts, end);
  }
  return r;
}

// Time of `spans` inside [from, to).
double covered(const Intervals& spans, double from, double to) {
  double sum = 0;
  for (const auto& [a, b] : spans) sum += std::max(0.0, std::min(to, b) - std::max(from, a));
  return sum;
}

bool is_sync_name(const std::string& name) {
  return name.find("Synchronize") != std::string::npos;
}

}  // namespace

TEST_SUITE("critical_path") {
  // A trace of ../shared/ab_pairs with its graph, its raw events and its
  // windows checked against the graph's iterations.
  struct RemovedCase {
    Raw raw;
    jarvis::Trace t;
    std::unique_ptr<jarvis::CallTree> tree;
    std::vector<cp::RankInput> inputs;
    std::optional<cp::Graph> g;
    double steps = 0;
  };
  std::unique_ptr<RemovedCase> load_ab(const std::string& file) {
    const std::string path = jarvis::golden::shared_dir() + "/ab_pairs/" + file;
    if (!std::filesystem::exists(path)) return nullptr;
    auto l = std::make_unique<RemovedCase>();
    l->raw = read_raw(path);
    l->t = jarvis::load_trace(path);
    l->tree = std::make_unique<jarvis::CallTree>(l->t);
    l->inputs = {{&l->t, l->tree.get(), -1}};
    l->g = cp::build_graph(l->inputs);
    REQUIRE(l->raw.windows.size() == 3);
    REQUIRE(l->g->iterations.size() == l->raw.windows.size());
    for (size_t k = 0; k < l->raw.windows.size(); ++k) {
      CHECK(std::abs(l->g->iterations[k].start - l->raw.windows[k].first) < 1e-3);
      CHECK(std::abs(l->g->iterations[k].end - l->raw.windows[k].second) < 1e-3);
    }
    l->steps = static_cast<double>(l->raw.windows.size());
    return l;
  }

  TEST_CASE("what-if removed_us: the waits of syncs inside the iterations only (raw events)") {
    // Every synchronising call of s_attn A, the cudaDeviceSynchronize
    // outside the steps among them: on the recorded host a sync's wait is its
    // call (entry to return), and only the ones inside count.
    auto l = load_ab("s_attn_A_eager_attention.json.gz");
    if (!l) {
      MESSAGE("skipped: ../shared/ab_pairs is missing");
      return;
    }
    double inside = 0, outside = 0;
    std::set<std::string> names;
    for (const RawEvent& e : l->raw.events)
      if (Raw::runtime(e) && is_sync_name(e.name)) {
        (l->raw.inside(e.ts) ? inside : outside) += e.end - e.ts;
        names.insert(e.name);
      }
    REQUIRE(inside > 0);
    REQUIRE(outside > 10.0);  // a wait outside the steps, not counted
    cp::Scenario sc;
    sc.recorded_host = true;
    cp::HostRemoval rm;
    rm.ops.assign(names.begin(), names.end());
    rm.waits_only = true;
    cp::add_host_removal(l->inputs, *l->g, rm, sc);
    const cp::WhatIfResult r = cp::what_if(*l->g, sc);
    CHECK(r.removed_us == doctest::Approx(inside / l->steps).epsilon(1e-6));
    // The same syncs on the un-profiled host (the default): their waits on
    // that schedule (the engine's replay without the profiler's cost), from
    // the entries inside the raw windows.
    sc.recorded_host = false;
    const cp::WhatIfResult u = cp::what_if(*l->g, sc);
    std::vector<double> dur, lag;
    cp::unprofiled_times(*l->g, dur, lag);
    const cp::Schedule base = cp::propagate(*l->g, dur, lag);
    std::map<jarvis::Uid, double> entry;
    double waits = 0;
    for (uint32_t n = 0; n < l->g->nodes.size(); ++n) {
      const cp::Node& node = l->g->nodes[n];
      if (node.uid == jarvis::kNoUid || !names.count(std::string(l->t.name(node.uid)))) continue;
      if (node.kind == cp::NodeKind::HostCall && l->raw.inside(node.start))
        entry[node.uid] = base.start[n];
    }
    for (uint32_t n = 0; n < l->g->nodes.size(); ++n) {
      const cp::Node& node = l->g->nodes[n];
      if (node.kind == cp::NodeKind::SyncReturn && entry.count(node.uid))
        waits += base.start[n] - entry[node.uid];
    }
    CHECK(u.removed_us == doctest::Approx(waits / l->steps).epsilon(1e-6));
    CHECK(u.removed_us <= u.measured_step_time_us);
  }

  TEST_CASE("what-if removed_us: scaled GPU time and host ops removed whole (raw events)") {
    auto l = load_ab("s_mask_sync_A_boolean_index.json.gz");
    if (!l) {
      MESSAGE("skipped: ../shared/ab_pairs is missing");
      return;
    }
    const Raw& raw = l->raw;
    const cp::Graph& g = *l->g;
    const auto& inputs = l->inputs;
    const double steps = l->steps;

    SUBCASE("scaled GPU time: the selected kernels inside the iterations, either host") {
      // The kernel with the most time in the trace, at half its duration.
      std::map<std::string, double> by_name;
      for (const RawEvent& e : raw.events)
        if (e.cat == "kernel") by_name[e.name] += e.end - e.ts;
      const auto top =
          std::max_element(by_name.begin(), by_name.end(),
                           [](const auto& a, const auto& b) { return a.second < b.second; });
      double inside = 0;
      for (const RawEvent& e : raw.events)
        if (e.cat == "kernel" && e.name == top->first && raw.inside(e.ts)) inside += e.end - e.ts;
      REQUIRE(inside > 0);
      for (const bool recorded : {true, false}) {
        CAPTURE(recorded);
        cp::Scenario sc;
        sc.recorded_host = recorded;
        sc.select.kernel = top->first;
        sc.factor = 0.5;
        const cp::WhatIfResult r = cp::what_if(g, sc);
        CHECK(r.removed_us == doctest::Approx(0.5 * inside / steps).epsilon(1e-6));
      }
    }

    SUBCASE("host ops removed whole: their gaps, calls, syncs and GPU work, recorded host") {
      // aten::nonzero (two a step): its spans on its thread; the thread's
      // host chain (runtime calls and the step's start / end marks, in time
      // order) loses the spans' time inside each gap, each call at least half
      // inside goes whole (a sync: its wait), and the GPU ops those calls
      // launched take no time.
      std::map<std::string, Intervals> spans;
      for (const RawEvent& e : raw.events)
        if (e.cat == "cpu_op" && e.name == "aten::nonzero")
          spans[e.thread].emplace_back(e.ts, e.end);
      REQUIRE(!spans.empty());
      double expected = 0;
      for (auto& [thread, s] : spans) {
        // Nested matches once: the union's pieces.
        std::sort(s.begin(), s.end());
        Intervals merged;
        for (const auto& iv : s)
          if (!merged.empty() && iv.first <= merged.back().second)
            merged.back().second = std::max(merged.back().second, iv.second);
          else
            merged.push_back(iv);
        s = merged;
        // (time, order, end): step ends before step starts before calls at one time.
        std::vector<std::tuple<double, int, double>> chain;
        for (const RawEvent& e : raw.events) {
          if (e.thread != thread) continue;
          if (Raw::runtime(e)) chain.emplace_back(e.ts, 2, e.end);
          if (e.cat == "user_annotation" && e.name.starts_with("ProfilerStep#")) {
            chain.emplace_back(e.ts, 1, e.ts);
            chain.emplace_back(e.end, 0, e.end);
          }
        }
        std::stable_sort(chain.begin(), chain.end(), [](const auto& a, const auto& b) {
          return std::tie(std::get<0>(a), std::get<1>(a)) <
                 std::tie(std::get<0>(b), std::get<1>(b));
        });
        for (size_t k = 1; k < chain.size(); ++k) {
          const double from = std::get<2>(chain[k - 1]), to = std::get<0>(chain[k]);
          if (to > from && raw.inside(from)) expected += covered(s, from, to);
        }
        for (const RawEvent& e : raw.events) {
          if (e.thread != thread || !Raw::runtime(e) || !raw.inside(e.ts)) continue;
          const double dur = e.end - e.ts;
          if (dur > 0 && covered(s, e.ts, e.end) >= 0.5 * dur) expected += dur;
        }
        // GPU ops launched by calls inside the spans.
        for (const RawEvent& c : raw.events) {
          if (c.thread != thread || !Raw::runtime(c) || c.corr < 0) continue;
          bool in_span = false;
          for (const auto& [a, b] : s) in_span |= c.ts >= a && c.ts < b;
          if (!in_span) continue;
          auto [lo, hi] = raw.gpu_by_corr.equal_range(c.corr);
          for (auto it = lo; it != hi; ++it)
            if (raw.inside(it->second->ts)) expected += it->second->end - it->second->ts;
        }
      }
      cp::Scenario sc;
      sc.recorded_host = true;
      cp::HostRemoval rm;
      rm.ops = {"aten::nonzero"};
      const cp::HostRemovalMatch m = cp::add_host_removal(inputs, g, rm, sc);
      REQUIRE(m.syncs > 0);
      REQUIRE(!sc.remove_gpu.empty());
      const cp::WhatIfResult r = cp::what_if(g, sc);
      CHECK(r.removed_us == doctest::Approx(expected / steps).epsilon(1e-4));
    }
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
