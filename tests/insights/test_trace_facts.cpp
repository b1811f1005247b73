// What several insight rules read, computed once per trace (issue 75 point 1,
// insights/trace_facts.h), and the scans made linear for it: the innermost
// annotation enclosing a launch (idle_gaps' places, one sweep per thread),
// the unrecorded host stretches picked per place from one scan, the GPU idle
// the host opened summed by place, what a kernel name says read once per
// name. A timeline worked by hand, and real traces of ../shared/ab_pairs
// against the plain definitions recomputed here (a pass over every
// annotation per gap, a scan of all events per place, a sum by name string).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "critical_path/host_gaps.h"
#include "golden.h"
#include "insights/idle_gaps.h"
#include "insights/insights.h"
#include "insights/kernel_name.h"
#include "insights/rules_internal.h"
#include "insights/trace_facts.h"
#include "raw_timeline.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
namespace in = jarvis::insights;
namespace cp = jarvis::critical_path;
using jarvis::testing::launched_kernel;

std::string annotation(const char* name, double ts, double dur, int tid = 1) {
  return fmt::format(
      R"({{"ph":"X","cat":"user_annotation","name":"{}","pid":1,"tid":{},"ts":{},"dur":{}}})", name,
      tid, ts, dur);
}

std::string place_name(const Trace& t, Uid place) {
  return place == kNoUid ? "-" : std::string(t.name(place));
}

// The place idle_gaps gives a gap's launch, by its definition: the innermost
// user annotation above it in the call tree, else of the annotations on its
// thread whose span holds its start the shortest (the first in uid order of
// equal ones), else its outermost cpu_op. A pass over every annotation.
Uid expected_place(const Trace& t, const CallTree& tree, Uid u) {
  Uid outer_op = kNoUid;
  for (Uid p = tree.parent(u); p != kNoUid; p = tree.parent(p)) {
    if (t.events[p].cat == Cat::UserAnnotation) return p;
    if (t.events[p].cat == Cat::CpuOp) outer_op = p;
  }
  const Event& e = t.events[u];
  Uid best = kNoUid;
  for (Uid a = 0; a < t.events.size(); ++a) {
    const Event& x = t.events[a];
    if (x.cat != Cat::UserAnnotation || !x.has_dur() || x.thread != e.thread) continue;
    if (x.ts() > e.ts() || x.end() < e.ts()) continue;
    if (best == kNoUid || x.dur() < t.events[best].dur()) best = a;
  }
  return best != kNoUid ? best : outer_op;
}

std::string ab(const std::string& file) {
  return golden::shared_dir() + "/ab_pairs/" + file;
}

struct Loaded {
  Trace trace;
  std::unique_ptr<CallTree> tree;
};

std::unique_ptr<Loaded> load(const std::string& file) {
  auto l = std::make_unique<Loaded>();
  l->trace = load_trace(ab(file));
  l->tree = std::make_unique<CallTree>(l->trace);
  return l;
}

TEST_CASE("trace facts: the annotation enclosing a launch, worked by hand") {
  // Thread 1's annotations (none holds a launch in the call tree, which
  // hangs runtime calls under cpu_ops): outer [0, 3000), inner [1000, 1500),
  // late [1400, 2400) (overlapping inner without nesting), twin1 and twin2
  // both [2500, 2700); thread 2's `other` [1000, 1200). Launches on thread 1
  // at 10, 1100, 1450, 1500, 1600, 2600 and 3500, each kernel 10 us later
  // and 5 us long, so each kernel after the first closes a gap whose place
  // is its launch's:
  //   1100: inner (500 us) inside outer; `other` is another thread's.
  //   1450: inner (500) before late (1000).
  //   1500: inner still (its end is not before the launch).
  //   1600: late (inner has ended).
  //   2600: twin1 (as short as twin2, first in uid order).
  //   3500: none (no annotation, no cpu_op).
  const std::string ev =
      annotation("outer", 0, 3000) + "," + annotation("inner", 1000, 500) + "," +
      annotation("late", 1400, 1000) + "," + annotation("twin1", 2500, 200) + "," +
      annotation("twin2", 2500, 200) + "," + annotation("other", 1000, 200, 2) + "," +
      launched_kernel(1, 10, 20, 5) + "," + launched_kernel(2, 1100, 1110, 5) + "," +
      launched_kernel(3, 1450, 1460, 5) + "," + launched_kernel(4, 1500, 1510, 5) + "," +
      launched_kernel(5, 1600, 1610, 5) + "," + launched_kernel(6, 2600, 2610, 5) + "," +
      launched_kernel(7, 3500, 3510, 5);
  const Trace trace = load_trace_from_json(R"({"traceEvents":[)" + ev + "]}");
  const CallTree tree(trace);
  const auto idle = in::idle_gaps(trace, tree, 20.0);
  std::map<std::string, std::string> place_by_kernel;
  for (const auto& g : idle.gaps)
    place_by_kernel[std::string(trace.name(g.after))] = place_name(trace, g.place);
  const std::map<std::string, std::string> expected = {{"k2", "inner"}, {"k3", "inner"},
                                                       {"k4", "inner"}, {"k5", "late"},
                                                       {"k6", "twin1"}, {"k7", "-"}};
  CHECK(place_by_kernel == expected);
  // The same by the definition, a pass over every annotation per gap.
  for (const auto& g : idle.gaps)
    CHECK(g.place == expected_place(trace, tree, tree.parent(g.after)));
}

TEST_CASE("trace facts: idle places and host-opened idle on real traces, as defined") {
  for (const char* file :
       {"s_adam_A_foreach.json.gz", "s_loader_A_workers0.json.gz", "s_generate_A_gpt2.json.gz"}) {
    CAPTURE(file);
    auto l = load(file);
    const auto context = in::make_context(l->trace, *l->tree, nullptr);
    const in::IdleGaps& idle = in::idle_gaps(context);
    REQUIRE(!idle.gaps.empty());
    // Computed once: the same object for every rule that asks.
    CHECK(&idle == &in::idle_gaps(context));
    size_t placed = 0;
    for (const auto& g : idle.gaps) {
      const Uid launch = l->tree->parent(g.after);
      if (launch == kNoUid) continue;  // placed by its host event, if any
      CHECK(g.place == expected_place(l->trace, *l->tree, launch));
      placed += g.place != kNoUid;
    }
    CHECK(placed > 0);
    // The GPU idle the host opened, by place name: host_work gaps whole, of
    // the short launch_latency gaps the part before their launch call.
    std::map<std::string, double> expected;
    for (const auto& g : idle.gaps) {
      double us = 0;
      if (g.cause == in::IdleCause::HostWork) us = g.dur_us;
      if (g.cause == in::IdleCause::LaunchLatency && g.after != kNoUid) {
        const Uid launch = l->tree->parent(g.after);
        if (launch != kNoUid && l->trace.events[launch].is_runtime())
          us = std::clamp(l->trace.events[launch].ts() - g.start_us, 0.0, g.dur_us);
      }
      if (us > 0)
        expected[g.place == kNoUid ? "(no launching op)" : place_name(l->trace, g.place)] += us;
    }
    CHECK(in::detail::host_work_idle_by_place(context) == expected);
  }
}

TEST_CASE("trace facts: each place's host stretches from one scan, as a scan per place") {
  for (const char* file : {"s_loader_A_workers0.json.gz", "s_generate_A_gpt2.json.gz"}) {
    CAPTURE(file);
    auto l = load(file);
    const auto context = in::make_context(l->trace, *l->tree, nullptr);
    REQUIRE(context.step);
    const std::vector<cp::RankInput> inputs{{&l->trace, l->tree.get(), -1}};
    const auto& all = in::detail::unrecorded_host_gaps(context);
    REQUIRE(!all.empty());
    std::map<std::pair<std::string, std::string>, size_t> places;
    for (const auto& g : all) ++places[{g.after_name, g.before_name}];
    for (double min_us : {in::detail::kUnrecordedMinGapUs, 300.0, 50.0}) {
      for (const auto& [place, count] : places) {
        cp::HostGapSelector sel;
        sel.min_us = min_us;
        sel.after = place.first;
        sel.before = place.second;
        cp::Scenario picked, scanned;
        std::vector<cp::HostGap> from_facts, from_scan;
        std::string facts_error, scan_error;
        try {
          from_facts = in::detail::add_host_gap_removal(context, sel, picked);
        } catch (const std::runtime_error& e) {
          facts_error = e.what();
        }
        try {
          from_scan = cp::add_host_gap_removal(inputs, context.step->graph, sel, scanned);
        } catch (const std::runtime_error& e) {
          scan_error = e.what();
        }
        CHECK(facts_error == scan_error);
        REQUIRE(from_facts.size() == from_scan.size());
        for (size_t k = 0; k < from_scan.size(); ++k) {
          CHECK(from_facts[k].after == from_scan[k].after);
          CHECK(from_facts[k].before == from_scan[k].before);
          CHECK(from_facts[k].from_us == from_scan[k].from_us);
          CHECK(from_facts[k].to_us == from_scan[k].to_us);
          CHECK(from_facts[k].profiler_us == from_scan[k].profiler_us);
        }
        REQUIRE(picked.remove_unrecorded.size() == scanned.remove_unrecorded.size());
        for (size_t k = 0; k < scanned.remove_unrecorded.size(); ++k) {
          CHECK(picked.remove_unrecorded[k].thread == scanned.remove_unrecorded[k].thread);
          CHECK(picked.remove_unrecorded[k].from_us == scanned.remove_unrecorded[k].from_us);
          CHECK(picked.remove_unrecorded[k].to_us == scanned.remove_unrecorded[k].to_us);
        }
      }
    }
  }
}

TEST_CASE("trace facts: the host events read before the graph give the same stretches") {
  for (const char* file : {"s_loader_A_workers0.json.gz", "s_generate_A_gpt2.json.gz"}) {
    CAPTURE(file);
    auto l = load(file);
    const Trace& t = l->trace;
    // What records host work, by definition: cpu ops, runtime calls and a
    // DataLoader's __next__ annotation, with a time and a duration; in
    // (ts, end, uid) order.
    std::vector<Uid> expected;
    size_t frames = 0;
    for (Uid u = 0; u < t.events.size(); ++u) {
      const Event& e = t.events[u];
      if (!e.has_ts() || !e.has_dur()) continue;
      const std::string name(t.name(u));
      if (e.cat == Cat::CpuOp || is_runtime_cat(e.cat) ||
          (e.cat == Cat::UserAnnotation && name.find("DataLoader") != std::string::npos &&
           name.find("__next__") != std::string::npos))
        expected.push_back(u);
      else if (e.cat == Cat::PythonFunction)
        ++frames;
    }
    std::sort(expected.begin(), expected.end(), [&](Uid a, Uid b) {
      const Event &x = t.events[a], &y = t.events[b];
      if (x.ts() != y.ts()) return x.ts() < y.ts();
      if (x.end() != y.end()) return x.end() < y.end();
      return a < b;
    });
    const cp::HostGapEvents recorded = cp::host_gap_events(t);
    CHECK(recorded.events == expected);
    CHECK(recorded.frame_marks.size() == 2 * frames);
    CHECK(std::is_sorted(recorded.frame_marks.begin(), recorded.frame_marks.end()));
    // The stretches from them, and from a scan of its own, and the context's
    // (made ahead of the model, then taken over).
    const auto context = in::make_context(t, *l->tree, nullptr);
    REQUIRE(context.step);
    in::detail::make_host_gap_events(context);
    const std::vector<cp::RankInput> inputs{{&t, l->tree.get(), -1}};
    cp::HostGapSelector any;
    any.min_us = in::detail::kUnrecordedMinGapUs;
    const auto own = cp::unrecorded_host_gaps(inputs, context.step->graph, any);
    const auto given = cp::unrecorded_host_gaps(inputs, context.step->graph, any, {&recorded});
    const auto& kept = in::detail::unrecorded_host_gaps(context);
    REQUIRE(!own.empty());
    for (const auto* other : {&given, &kept}) {
      REQUIRE(other->size() == own.size());
      for (size_t k = 0; k < own.size(); ++k) {
        CHECK((*other)[k].after == own[k].after);
        CHECK((*other)[k].before == own[k].before);
        CHECK((*other)[k].from_us == own[k].from_us);
        CHECK((*other)[k].to_us == own[k].to_us);
        CHECK((*other)[k].profiler_us == own[k].profiler_us);
        CHECK((*other)[k].annotation == own[k].annotation);
      }
    }
    CHECK_THROWS_AS(
        cp::unrecorded_host_gaps(inputs, context.step->graph, any, {&recorded, &recorded}),
        cp::CriticalPathError);
  }
}

TEST_CASE("trace facts: a host removal made once adds what the scan adds, each time") {
  auto l = load("s_mask_sync_A_boolean_index.json.gz");
  const Trace& t = l->trace;
  const auto context = in::make_context(t, *l->tree, nullptr);
  REQUIRE(context.step);
  const std::vector<cp::RankInput> inputs{{&t, l->tree.get(), -1}};
  cp::HostRemoval by_name;
  by_name.ops = {"aten::nonzero"};
  cp::HostRemoval waits = by_name;
  waits.waits_only = true;
  cp::HostRemoval by_uid;
  for (Uid u = 0; u < t.events.size() && by_uid.uids.size() < 3; ++u)
    if (t.events[u].cat == Cat::CpuOp && t.name(u) == "aten::nonzero") by_uid.uids.push_back(u);
  REQUIRE(by_uid.uids.size() == 3);
  // A scenario holding a removal already: the new one is added after it.
  cp::Scenario start;
  cp::HostRemoval first;
  for (Uid u = 0; u < t.events.size() && first.uids.empty(); ++u)
    if (t.events[u].cat == Cat::CpuOp && t.events[u].has_dur() && t.name(u) != "aten::nonzero")
      first.uids.push_back(u);
  REQUIRE_NOTHROW(cp::add_host_removal(inputs, context.step->graph, first, start));
  for (const cp::HostRemoval* rm : {&by_name, &waits, &by_uid, &by_name}) {
    cp::Scenario scanned = start, made = start;
    cp::add_host_removal(inputs, context.step->graph, *rm, scanned);
    in::detail::add_host_removal(context, *rm, made);  // the last one: the kept one
    REQUIRE(!scanned.remove_syncs.empty());
    CHECK(made.remove_host.size() == scanned.remove_host.size());
    for (size_t k = 0; k < std::min(made.remove_host.size(), scanned.remove_host.size()); ++k) {
      CHECK(made.remove_host[k].thread == scanned.remove_host[k].thread);
      CHECK(made.remove_host[k].from_us == scanned.remove_host[k].from_us);
      CHECK(made.remove_host[k].to_us == scanned.remove_host[k].to_us);
    }
    CHECK(made.remove_syncs == scanned.remove_syncs);
    CHECK(made.remove_gpu == scanned.remove_gpu);
    CHECK(made.host_removal == scanned.host_removal);
    CHECK(in::detail::scenario_key(made, cp::StepDetail::Times, cp::RemovedUs::Skip) ==
          in::detail::scenario_key(scanned, cp::StepDetail::Times, cp::RemovedUs::Skip));
  }
  // Nothing matched: the scan's error, each time (nothing kept).
  cp::HostRemoval none;
  none.ops = {"aten::no_such_op"};
  for (int k = 0; k < 2; ++k) {
    cp::Scenario sc;
    CHECK_THROWS_AS(in::detail::add_host_removal(context, none, sc), cp::CriticalPathError);
  }
}

TEST_CASE("trace facts: a host what-if replayed once per scenario, as replayed anew") {
  auto l = load("s_mask_sync_A_boolean_index.json.gz");
  const Trace& t = l->trace;
  const auto context = in::make_context(t, *l->tree, nullptr);
  REQUIRE(context.step);
  const auto& graph = context.step->graph;
  const auto& base = *graph.attached_base;
  // Two host changes: the unrecorded stretches taken out, and the same
  // with one stretch less (a different scenario: a different key).
  cp::Scenario all;
  const auto gaps = in::detail::unrecorded_host_gaps(context);
  REQUIRE(gaps.size() >= 2);
  cp::add_host_gaps(gaps, all);
  cp::Scenario fewer = all;
  fewer.remove_unrecorded.pop_back();
  const auto key = [](const cp::Scenario& sc, cp::RemovedUs removed = cp::RemovedUs::Skip) {
    return in::detail::scenario_key(sc, cp::StepDetail::Times, removed);
  };
  CHECK(key(all) == key(cp::Scenario(all)));
  CHECK(key(all) != key(fewer));
  CHECK(key(all) != key(all, cp::RemovedUs::Sum));
  CHECK(in::detail::scenario_key(all, cp::StepDetail::Bounds, cp::RemovedUs::Skip) != key(all));
  cp::Scenario scaled = all;
  scaled.factor = 0.5;
  CHECK(key(scaled) != key(all));
  cp::Scenario synced = all;
  synced.remove_syncs.push_back({0, 1});
  CHECK(key(synced) != key(all));
  // The memo: a key replayed once, each later ask served its result.
  size_t replays = 0;
  const auto replay = [&](const cp::Scenario& sc) {
    return [&replays, &graph, &base, &sc] {
      ++replays;
      return cp::what_if_step(graph, sc, base);
    };
  };
  const auto first = in::detail::replayed_once(context, key(all), replay(all));
  const auto again = in::detail::replayed_once(context, key(all), replay(all));
  CHECK(replays == 1);
  const auto other = in::detail::replayed_once(context, key(fewer), replay(fewer));
  CHECK(replays == 2);
  // Served results equal fresh replays of the same scenarios.
  const auto fresh = cp::what_if_step(graph, all, base);
  CHECK(first.predicted_step_time_us == fresh.predicted_step_time_us);
  CHECK(again.predicted_step_time_us == fresh.predicted_step_time_us);
  CHECK(again.measured_step_time_us == fresh.measured_step_time_us);
  CHECK(again.changes == fresh.changes);
  CHECK(other.predicted_step_time_us ==
        cp::what_if_step(graph, fewer, base).predicted_step_time_us);
  CHECK(fresh.predicted_step_time_us < fresh.measured_step_time_us);  // the stretches cost time
  // step_time_what_if asks the memo for host changes: the same figures.
  const auto via_rules = in::detail::step_time_what_if(context, all);
  CHECK(via_rules.predicted_step_time_us == fresh.predicted_step_time_us);
  // A replay that throws keeps nothing: the next ask replays again.
  CHECK_THROWS(in::detail::replayed_once(context, "throws", [&]() -> cp::WhatIfResult {
    ++replays;
    throw std::runtime_error("no such change");
  }));
  CHECK_THROWS(in::detail::replayed_once(context, "throws", [&]() -> cp::WhatIfResult {
    ++replays;
    throw std::runtime_error("no such change");
  }));
  CHECK(replays == 4);
}

TEST_CASE("trace facts: host events in (ts, end, uid) order from threads listed in runs") {
  // Three threads, each listed in blocks (a tiled trace's copies: its ops,
  // then its runtime calls), a block out of time order, ops that start
  // together (end, then uid decide), a thread seen once, and a ten-thread
  // variant: the order is the one sort of the whole list by (ts, end, uid)
  // gives.
  for (int threads : {3, 10}) {
    CAPTURE(threads);
    std::string ev;
    uint64_t seed = 7;
    const auto next = [&] { return seed = seed * 6364136223846793005ull + 1442695040888963407ull; };
    for (int block = 0; block < 12; ++block)
      for (int tid = 1; tid <= threads; ++tid) {
        const double base = (block == 5 ? 3 : block) * 1000.0 + tid;
        for (int k = 0; k < 6; ++k) {
          const double ts = base + 10 * k + (next() >> 62);  // ties across threads
          ev += fmt::format(
              R"({}{{"ph":"X","cat":"cpu_op","name":"op{}","pid":1,"tid":{},"ts":{},"dur":{}}})",
              ev.empty() ? "" : ",", k, tid, ts, 1 + (next() >> 61));
        }
        // The block's runtime calls, listed after its ops as Kineto lists
        // them, their times among the ops' (some tied with one).
        for (int k = 0; k < 4; ++k)
          ev += fmt::format(
              R"(,{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":{},"ts":{},"dur":{}}})",
              tid, base + 10 * k + 5 * (next() >> 63), 1 + (next() >> 62));
      }
    ev +=
        R"(,{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":99,"ts":500,"dur":2})";
    const Trace t = load_trace_from_json(R"({"traceEvents":[)" + ev + "]}");
    std::vector<Uid> expected;
    for (Uid u = 0; u < t.events.size(); ++u)
      if (t.events[u].has_ts() && t.events[u].has_dur()) expected.push_back(u);
    std::sort(expected.begin(), expected.end(), [&](Uid a, Uid b) {
      const Event &x = t.events[a], &y = t.events[b];
      if (x.ts() != y.ts()) return x.ts() < y.ts();
      if (x.end() != y.end()) return x.end() < y.end();
      return a < b;
    });
    CHECK(cp::host_gap_events(t).events == expected);
  }
}

TEST_CASE("trace facts: host events in (ts, end, uid) order on clocks past 2^52 ns") {
  // Starts compared as integers where their microseconds cannot collapse
  // (within 2^52 ns), as doubles beyond: near 8.9e15 ns two starts 1 ns apart
  // are one double (its spacing there is 2 ns), and the order falls to the
  // ends, then the UIDs, as one sort by (ts(), end(), uid) gives.
  for (const int64_t base_us : {int64_t{4'400'000'000'000}, int64_t{8'900'000'000'000}}) {
    CAPTURE(base_us);
    std::string ev;
    uint64_t seed = 11;
    const auto next = [&] { return seed = seed * 6364136223846793005ull + 1442695040888963407ull; };
    for (int k = 0; k < 400; ++k)
      ev += fmt::format(
          // The text exact to the nanosecond (a double sum would round it).
          R"({}{{"ph":"X","cat":"{}","name":"op","pid":1,"tid":{},"ts":{}.{:03d},"dur":0.{:03d}}})",
          ev.empty() ? "" : ",", k % 3 ? "cpu_op" : "cuda_runtime", 1 + k % 2, base_us,
          next() >> 58, 1 + (next() >> 60));
    const Trace t = load_trace_from_json(R"({"traceEvents":[)" + ev + "]}");
    size_t collapsed = 0;  // starts that differ in ns and not in us
    for (Uid a = 0; a < t.events.size(); ++a)
      for (Uid b = 0; b < a; ++b)
        collapsed += t.events[a].ts_ns != t.events[b].ts_ns && t.events[a].ts() == t.events[b].ts();
    CHECK((collapsed > 0) == (base_us > int64_t{8'000'000'000'000}));
    std::vector<Uid> expected;
    for (Uid u = 0; u < t.events.size(); ++u) expected.push_back(u);
    std::sort(expected.begin(), expected.end(), [&](Uid a, Uid b) {
      const Event &x = t.events[a], &y = t.events[b];
      if (x.ts() != y.ts()) return x.ts() < y.ts();
      if (x.end() != y.end()) return x.end() < y.end();
      return a < b;
    });
    CHECK(cp::host_gap_events(t).events == expected);
  }
}

TEST_CASE("trace facts: a kernel name read once says what the parser says") {
  // The fp32 arm runs SIMT GEMMs; the NCHW arm converts layouts around its
  // convolutions.
  for (const char* file : {"s_tf32_A_fp32.json.gz", "s_layout_A_nchw.json.gz"}) {
    CAPTURE(file);
    auto l = load(file);
    const auto context = in::make_context(l->trace, *l->tree, nullptr);
    size_t kernels = 0, simt = 0, conversions = 0;
    for (Uid u : l->tree->gpu_event_uids()) {
      const auto& f = in::detail::kernel_name_facts(context, u);
      const std::string_view name = l->trace.name(u);
      const in::KernelTraits t = in::parse_kernel_name(name);
      CHECK(f.traits.library == t.library);
      CHECK(f.traits.sm_arch == t.sm_arch);
      CHECK(f.traits.tile == t.tile);
      CHECK(f.traits.alignment == t.alignment);
      CHECK(f.traits.math_dtype == t.math_dtype);
      // An fp32 SIMT GEMM: sgemm / ffma in the name, no tf32.
      std::string lower(name.substr(0, 256));
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
      const bool is_simt =
          lower.find("gemm") != std::string::npos && lower.find("tf32") == std::string::npos &&
          (lower.find("sgemm") != std::string::npos || lower.find("ffma") != std::string::npos);
      CHECK(f.fp32_simt_gemm == is_simt);
      // A layout conversion: cuDNN's and MIOpen's kernel names.
      bool conversion = false;
      for (std::string_view marker : {"nchwToNhwc", "nhwcToNchw", "nchw2nhwc", "nhwc2nchw",
                                      "batched_transpose", "NCHWToNHWC", "NHWCToNCHW"})
        conversion |= name.substr(0, 512).find(marker) != std::string_view::npos;
      CHECK(f.layout_conversion == conversion);
      // One entry per distinct name.
      CHECK(&f == &in::detail::kernel_name_facts(context, u));
      ++kernels;
      simt += is_simt;
      conversions += conversion;
    }
    CHECK(kernels > 0);
    CHECK((std::string(file).find("tf32") != std::string::npos ? simt : conversions) > 0);
  }
}

TEST_CASE("trace facts: a row's GEMM dims read once are the row's own") {
  // Seven rules read every row's GEMM dims: read once per trace, each row's
  // are what gemm_dims(row) reads of it; dropped (release_rule_scratch) and
  // asked again, the same; a row not of the context's is refused.
  for (const char* file : {"s_tf32_A_fp32.json.gz", "s_vocab_A_vocab32001.json.gz"}) {
    CAPTURE(file);
    auto l = load(file);
    const auto context = in::make_context(l->trace, *l->tree, nullptr);
    size_t gemms = 0;
    const auto same = [&](const in::detail::GemmDims* memo, const report::PerfOpRow& row) {
      const auto own = in::detail::gemm_dims(row);
      REQUIRE((memo != nullptr) == own.has_value());
      if (!own) return;
      CHECK(memo->m == own->m);
      CHECK(memo->n == own->n);
      CHECK(memo->k == own->k);
      CHECK(memo->batch == own->batch);
      CHECK(memo->precision == own->precision);
      CHECK(memo->stride_a == own->stride_a);
      CHECK(memo->stride_b == own->stride_b);
      CHECK(row.sheet == "GEMM");
      ++gemms;
    };
    for (const auto& row : context.rows) {
      const in::detail::GemmDims* memo = in::detail::gemm_dims(context, row);
      same(memo, row);
      CHECK(memo == in::detail::gemm_dims(context, row));  // one copy per row
    }
    CHECK(gemms > 0);
    in::detail::release_rule_scratch(context);
    for (const auto& row : context.rows) same(in::detail::gemm_dims(context, row), row);
    const report::PerfOpRow stranger = context.rows.front();
    CHECK_THROWS_AS(in::detail::gemm_dims(context, stranger), std::logic_error);
  }
}

TEST_CASE("trace facts: the launching sibling lists are the sibling lists cut to launching ops") {
  // Epilogue fusion and projections on one input read consecutive GPU-launching
  // cpu_ops among siblings: the lists made once per trace are every sibling
  // list, in the same order, cut to those ops (with their names), the lists
  // of two or more of them; asked twice, the same.
  for (const char* file : {"s_attn_A_eager_attention.json.gz", "s_tf32_A_fp32.json.gz"}) {
    CAPTURE(file);
    auto l = load(file);
    const auto context = in::make_context(l->trace, *l->tree, nullptr);
    std::vector<std::vector<Uid>> expected;
    in::detail::for_each_sibling_list(context, [&](std::span<const Uid> siblings) {
      std::vector<Uid> cut;
      for (Uid u : siblings)
        if (l->trace.events[u].cat == Cat::CpuOp && !l->tree->gpu_events(u).empty())
          cut.push_back(u);
      if (cut.size() >= 2) expected.push_back(cut);
    });
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<std::vector<Uid>> got;
      in::detail::for_each_launching_sibling_list(
          context, [&](std::span<const Uid> uids, std::span<const uint32_t> names) {
            REQUIRE(names.size() == uids.size());
            for (size_t k = 0; k < uids.size(); ++k)
              CHECK(names[k] == l->trace.events[uids[k]].name);
            got.emplace_back(uids.begin(), uids.end());
          });
      CHECK(got == expected);
    }
    CHECK(expected.size() > 10);
  }
}

TEST_CASE("trace facts: the events of a name from the index are a scan's, in UID order") {
  // A dozen rules read the events of a few names: from the index of the
  // events by name, the same events as a scan of all of them filtered by
  // name, in the same order, whether the names are given or chosen by a test.
  for (const char* file : {"s_attn_A_eager_attention.json.gz", "s_adam_A_foreach.json.gz"}) {
    CAPTURE(file);
    auto l = load(file);
    const auto context = in::make_context(l->trace, *l->tree, nullptr);
    const Trace& t = l->trace;
    const auto scan = [&](const std::function<bool(std::string_view)>& keep) {
      std::vector<Uid> out;
      for (Uid u = 0; u < t.events.size(); ++u)
        if (keep(t.name(u))) out.push_back(u);
      return out;
    };
    const auto foreach_or_fused = [](std::string_view n) {
      return n.starts_with("aten::_foreach_") || n.starts_with("aten::_fused_adam");
    };
    const auto backward = [](std::string_view n) { return n.ends_with("Backward0"); };
    for (const auto& keep : std::vector<std::function<bool(std::string_view)>>{
             foreach_or_fused, backward, [](std::string_view) { return true; }}) {
      const std::vector<Uid> expected = scan(keep);
      CHECK(in::detail::events_named(context, keep) == expected);
    }
    CHECK(scan(backward).size() > 10);
    const std::vector<Uid> casts =
        in::detail::events_named(context, {"aten::to", "aten::_to_copy"});
    CHECK(casts ==
          scan([](std::string_view n) { return n == "aten::to" || n == "aten::_to_copy"; }));
    CHECK(!casts.empty());
    CHECK(in::detail::events_named(context, {"aten::to", "no such op", "aten::to"}) ==
          scan([](std::string_view n) { return n == "aten::to"; }));
    CHECK(in::detail::events_named(context, {"no such op"}).empty());
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
