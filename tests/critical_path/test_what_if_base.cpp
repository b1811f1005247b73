// A what-if on a precomputed base (critical_path::what_if_base, issue 75
// point 1): insights sizes every finding on one base of its step model, so a
// scenario on the base must give exactly what the what-if alone gives, and
// the lighter form (no prediction on the profiled host) the same un-profiled
// prediction, and the step-only form (what_if_step, analyse_steps: no path
// walked) the same steps. Each scenario runs every way on real
// ../shared/ab_pairs traces.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "critical_path/critical_path.h"
#include "golden.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;

struct BaseLoaded {
  jarvis::Trace trace;
  std::unique_ptr<jarvis::CallTree> tree;
  cp::Graph graph;
};

std::unique_ptr<BaseLoaded> load_ab(const std::string& file) {
  const std::string path = jarvis::golden::shared_dir() + "/ab_pairs/" + file;
  if (!std::filesystem::exists(path)) return nullptr;
  auto l = std::make_unique<BaseLoaded>();
  l->trace = jarvis::load_trace(path);
  l->tree = std::make_unique<jarvis::CallTree>(l->trace);
  l->graph = cp::build_graph({{&l->trace, l->tree.get(), -1}});
  return l;
}

// Runs `check` on the graph of each of two ab_pairs A arms (fp32 GEMMs; a
// boolean mask's sync), the file captured; says so once when
// ../shared/ab_pairs is missing.
void for_each_ab_graph(const std::function<void(const std::unique_ptr<BaseLoaded>&)>& check) {
  size_t checked = 0;
  for (const char* file : {"s_tf32_A_fp32.json.gz", "s_mask_sync_A_boolean_index.json.gz"}) {
    CAPTURE(file);
    auto l = load_ab(file);
    if (!l) continue;
    ++checked;
    check(l);
  }
  if (checked == 0) MESSAGE("skipped: ../shared/ab_pairs is missing");
}

std::vector<std::string> bounds(const cp::Analysis& a) {
  std::vector<std::string> out;
  for (const auto& it : a.iterations)
    out.push_back(it.bound_by + ":" + std::to_string(it.length_us));
  return out;
}

// The scenario alone, on the base, and on the base without the profiled
// prediction: the same step before and after, the same changes.
void check_same(const cp::Graph& g, const cp::WhatIfBase& base, const cp::Scenario& sc) {
  const cp::WhatIfResult alone = cp::what_if(g, sc);
  const cp::WhatIfResult on_base = cp::what_if(g, sc, base);
  CHECK(on_base.measured_step_time_us == alone.measured_step_time_us);
  CHECK(on_base.predicted_step_time_us == alone.predicted_step_time_us);
  CHECK(on_base.recorded_step_time_us == alone.recorded_step_time_us);
  CHECK(on_base.predicted_profiled_step_time_us == alone.predicted_profiled_step_time_us);
  CHECK(on_base.removed_us == alone.removed_us);
  CHECK(on_base.selected_nodes == alone.selected_nodes);
  CHECK(on_base.changes == alone.changes);
  CHECK(on_base.summary == alone.summary);
  CHECK(on_base.model == alone.model);
  CHECK(bounds(on_base.predicted) == bounds(alone.predicted));
  if (sc.recorded_host) return;
  const cp::WhatIfResult lite = cp::what_if(g, sc, base, /*profiled_prediction=*/false);
  CHECK(lite.measured_step_time_us == alone.measured_step_time_us);
  CHECK(lite.predicted_step_time_us == alone.predicted_step_time_us);
  CHECK(lite.removed_us == alone.removed_us);
  CHECK(lite.changes == alone.changes);
  CHECK(bounds(lite.predicted) == bounds(alone.predicted));
  CHECK(lite.predicted_profiled_step_time_us == 0);
  // The steps alone (what_if_step): the same figures, no path walked.
  const cp::WhatIfResult step = cp::what_if_step(g, sc, base);
  CHECK(step.measured_step_time_us == alone.measured_step_time_us);
  CHECK(step.predicted_step_time_us == alone.predicted_step_time_us);
  CHECK(step.removed_us == alone.removed_us);
  CHECK(step.selected_nodes == alone.selected_nodes);
  CHECK(step.changes == alone.changes);
  CHECK(step.model == alone.model);
  CHECK(step.factor_by_rank == alone.factor_by_rank);
  CHECK(step.matched_kernels.size() == alone.matched_kernels.size());
  CHECK(step.summary.empty());
  CHECK(step.predicted.contributors.empty());
  REQUIRE(step.predicted.iterations.size() == alone.predicted.iterations.size());
  for (size_t k = 0; k < step.predicted.iterations.size(); ++k) {
    const cp::IterationResult& a = step.predicted.iterations[k];
    const cp::IterationResult& b = alone.predicted.iterations[k];
    CHECK(a.name == b.name);
    CHECK(a.start_us == b.start_us);
    CHECK(a.end_us == b.end_us);
    CHECK(a.length_us == b.length_us);
    CHECK(a.host_end_us == b.host_end_us);
    CHECK(a.gpu_end_us == b.gpu_end_us);
    CHECK(a.differs == b.differs);
    CHECK(a.path.empty());
    CHECK(a.bound_by.empty());
  }
  // With the bounds: each iteration's bound_by as the full prediction says it.
  const cp::WhatIfResult bounded = cp::what_if_step(g, sc, base, cp::StepDetail::Bounds);
  CHECK(bounded.predicted_step_time_us == alone.predicted_step_time_us);
  CHECK(bounds(bounded.predicted) == bounds(alone.predicted));
  for (const auto& it : bounded.predicted.iterations) CHECK(it.path.empty());
  // Bounds when the times ask for them (bounds_when): asked, as with
  // StepDetail::Bounds, the times it was given the step-only ones; not
  // asked, the step-only result.
  std::optional<double> seen_step_us;
  const cp::WhatIfResult asked =
      cp::what_if_step(g, sc, base, cp::StepDetail::Times, [&](const cp::Analysis& times) {
        seen_step_us = times.step_time_us;
        return true;
      });
  REQUIRE(seen_step_us.has_value());
  CHECK(*seen_step_us == step.predicted_step_time_us);
  CHECK(asked.predicted_step_time_us == alone.predicted_step_time_us);
  CHECK(bounds(asked.predicted) == bounds(bounded.predicted));
  const cp::WhatIfResult not_asked = cp::what_if_step(g, sc, base, cp::StepDetail::Times,
                                                      [](const cp::Analysis&) { return false; });
  CHECK(not_asked.predicted_step_time_us == step.predicted_step_time_us);
  CHECK(bounds(not_asked.predicted) == bounds(step.predicted));
  // removed_us not summed (RemovedUs::Skip): NaN, everything else the same.
  const cp::WhatIfResult unsummed =
      cp::what_if_step(g, sc, base, cp::StepDetail::Times, {}, cp::RemovedUs::Skip);
  CHECK(std::isnan(unsummed.removed_us));
  CHECK(unsummed.measured_step_time_us == step.measured_step_time_us);
  CHECK(unsummed.predicted_step_time_us == step.predicted_step_time_us);
  CHECK(unsummed.changes == step.changes);
  CHECK(unsummed.selected_nodes == step.selected_nodes);
}

TEST_CASE("what-if on a base: the same result as the what-if alone (ab_pairs traces)") {
  for_each_ab_graph([](const std::unique_ptr<BaseLoaded>& l) {
    const cp::Graph& g = l->graph;
    const cp::WhatIfBase base = cp::what_if_base(g);
    REQUIRE(base.dur.size() == g.nodes.size());
    REQUIRE(base.lag.size() == g.edges.size());
    // The base's step is the un-profiled analysis's, its recorded step the recorded one's.
    CHECK(base.step_time_us == cp::analyse_unprofiled(g).step_time_us);
    CHECK(base.recorded_step_time_us == cp::analyse(g).step_time_us);

    cp::Scenario gemm;  // every GEMM twice as fast
    gemm.select.category = "gemm";
    gemm.factor = 0.5;
    check_same(g, base, gemm);

    cp::Scenario some;  // a few kernels by uid, nearly gone
    for (const cp::Node& n : g.nodes)
      if (n.kind == cp::NodeKind::Gpu && n.uid != jarvis::kNoUid &&
          some.select.gpu_uids.size() < 40)
        some.select.gpu_uids.push_back(n.uid);
    some.factor = 1e-6;
    check_same(g, base, some);

    cp::Scenario graphs;  // a CUDA graph of each iteration's launches
    graphs.remove_launch_gaps = true;
    check_same(g, base, graphs);

    cp::Scenario syncs;  // no synchronising call waits
    for (const cp::Node& n : g.nodes)
      if (n.kind == cp::NodeKind::SyncReturn) syncs.remove_syncs.emplace_back(n.rank, n.uid);
    if (!syncs.remove_syncs.empty()) check_same(g, base, syncs);

    cp::Scenario recorded = gemm;  // the trace's own host
    recorded.recorded_host = true;
    const cp::WhatIfBase recorded_base = cp::what_if_base(g, /*unprofiled=*/false);
    check_same(g, recorded_base, recorded);
    const cp::WhatIfResult recorded_step = cp::what_if_step(g, recorded, recorded_base);
    const cp::WhatIfResult recorded_full = cp::what_if(g, recorded);
    CHECK(recorded_step.measured_step_time_us == recorded_full.measured_step_time_us);
    CHECK(recorded_step.predicted_step_time_us == recorded_full.predicted_step_time_us);
    CHECK(recorded_step.removed_us == recorded_full.removed_us);
    CHECK(recorded_step.model == cp::kModelRecorded);

    // analyse_steps: analyse's iterations and step, on the recorded and
    // un-profiled times.
    std::vector<double> dur, lag;
    for (const cp::Node& n : g.nodes) dur.push_back(n.dur);
    for (const cp::Edge& e : g.edges) lag.push_back(e.lag);
    const auto same_steps = [&g](const std::vector<double>& d, const std::vector<double>& lg) {
      const cp::Analysis full = cp::analyse(g, d, lg);
      const cp::Analysis steps = cp::analyse_steps(g, d, lg);
      CHECK(steps.step_time_us == full.step_time_us);
      REQUIRE(steps.iterations.size() == full.iterations.size());
      for (size_t k = 0; k < steps.iterations.size(); ++k)
        CHECK(steps.iterations[k].length_us == full.iterations[k].length_us);
      CHECK(steps.iterations_source == full.iterations_source);
      CHECK(steps.gpu_backlog_left_out_us == full.gpu_backlog_left_out_us);
      CHECK(bounds(cp::analyse_steps(g, d, lg, cp::StepDetail::Bounds)) == bounds(full));
    };
    same_steps(dur, lag);
    same_steps(base.dur, base.lag);
  });
}

// The same figures, changes and matched kernels from two bases of one graph.
void check_same_on(const cp::Graph& g, const cp::WhatIfBase& a, const cp::WhatIfBase& b,
                   const cp::Scenario& sc) {
  const cp::WhatIfResult x = cp::what_if_step(g, sc, a), y = cp::what_if_step(g, sc, b);
  CHECK(x.predicted_step_time_us == y.predicted_step_time_us);
  CHECK(x.removed_us == y.removed_us);
  CHECK(x.selected_nodes == y.selected_nodes);
  CHECK(x.changes == y.changes);
  REQUIRE(x.matched_kernels.size() == y.matched_kernels.size());
  for (size_t k = 0; k < x.matched_kernels.size(); ++k) {
    CHECK(x.matched_kernels[k].name == y.matched_kernels[k].name);
    CHECK(x.matched_kernels[k].launches == y.matched_kernels[k].launches);
    CHECK(x.matched_kernels[k].time_us == y.matched_kernels[k].time_us);
  }
}

TEST_CASE("what-if on an indexed base: GPU events found by UID as the scan finds them") {
  for_each_ab_graph([](const std::unique_ptr<BaseLoaded>& l) {
    const cp::Graph& g = l->graph;
    const cp::WhatIfBase scanned = cp::what_if_base(g);
    REQUIRE(!scanned.indexed_for_replays);  // made only when asked for
    REQUIRE(scanned.gpu_nodes_by_uid.empty());
    cp::WhatIfBase indexed = scanned;
    cp::index_for_replays(g, indexed);
    // The index: every GPU node that has a UID, once, by UID.
    std::vector<std::pair<jarvis::Uid, uint32_t>> expected;
    for (uint32_t n = 0; n < g.nodes.size(); ++n)
      if (g.nodes[n].kind == cp::NodeKind::Gpu && g.nodes[n].uid != jarvis::kNoUid)
        expected.emplace_back(g.nodes[n].uid, n);
    std::sort(expected.begin(), expected.end());
    REQUIRE(!expected.empty());
    CHECK(indexed.gpu_nodes_by_uid == expected);
    // And every Sync edge, in edge order.
    std::vector<uint32_t> sync_edges;
    for (uint32_t k = 0; k < g.edges.size(); ++k)
      if (g.edges[k].kind == cp::EdgeKind::Sync) sync_edges.push_back(k);
    CHECK(indexed.sync_edges == sync_edges);
    // And the host's edges and runtime calls, in order.
    std::vector<uint32_t> host_edges, host_calls;
    for (uint32_t k = 0; k < g.edges.size(); ++k)
      if (g.edges[k].kind == cp::EdgeKind::HostSeq || g.edges[k].kind == cp::EdgeKind::HostHandover)
        host_edges.push_back(k);
    for (uint32_t n = 0; n < g.nodes.size(); ++n)
      if (g.nodes[n].kind == cp::NodeKind::HostCall) host_calls.push_back(n);
    REQUIRE(!host_edges.empty());
    CHECK(indexed.host_edges == host_edges);
    CHECK(indexed.host_calls == host_calls);
    // Host time taken out (spans around every fifth runtime call, as
    // removed host work and as unrecorded time) and a CUDA graph's launch
    // gaps: the indexed base's lists find what the scan of every edge finds.
    cp::Scenario host, unrecorded, graph;
    const double offset =
        g.clock_offset_us.count(g.ranks.front()) ? g.clock_offset_us.at(g.ranks.front()) : 0.0;
    for (size_t k = 0; k < host_calls.size(); k += 5) {
      const cp::Node& n = g.nodes[host_calls[k]];
      if (n.thread == UINT32_MAX) continue;
      const cp::HostSpan span{n.rank, n.thread, n.start - offset - 20, n.end() - offset + 20};
      host.remove_host.push_back(span);
      unrecorded.remove_unrecorded.push_back(span);
    }
    REQUIRE(!host.remove_host.empty());
    // The indexed base finds what a span reaches through its runs of each
    // thread's gaps and calls (WhatIfBase::host_runs): a span over a whole
    // iteration (many of them), one that covers nothing (its end before
    // its start) and one on a thread with no host items find the same too.
    const cp::Node& some_call = g.nodes[host_calls.front()];
    const cp::Iteration& first = g.iterations.front();
    for (const cp::HostSpan& span :
         {cp::HostSpan{some_call.rank, some_call.thread, first.start - offset, first.end - offset},
          cp::HostSpan{some_call.rank, some_call.thread, first.end - offset, first.start - offset},
          cp::HostSpan{some_call.rank, 123456789u, first.start - offset, first.end - offset}}) {
      cp::Scenario wide_host, wide_unrecorded;
      wide_host.remove_host = {span};
      wide_unrecorded.remove_unrecorded = {span};
      check_same_on(g, scanned, indexed, wide_host);
      check_same_on(g, scanned, indexed, wide_unrecorded);
    }
    graph.remove_launch_gaps = true;
    for (const cp::Scenario* sc : {&host, &unrecorded, &graph}) {
      check_same_on(g, scanned, indexed, *sc);
      CHECK(cp::what_if_step(g, *sc, indexed).removed_us ==
            cp::what_if_step(g, *sc, scanned).removed_us);
    }
    CHECK(cp::what_if_step(g, host, indexed).removed_us > 0);  // the spans take something out
    CHECK(cp::what_if_step(g, graph, indexed).removed_us > 0);

    // Kernels by UID (one given twice), a host event's UID and one past the
    // trace, which select nothing.
    std::vector<jarvis::Uid> uids;
    for (size_t k = 0; k < expected.size() && uids.size() < 60; k += 3)
      uids.push_back(expected[k].first);
    uids.push_back(uids.front());
    for (const cp::Node& n : g.nodes)
      if (n.kind == cp::NodeKind::HostCall && n.uid != jarvis::kNoUid) {
        uids.push_back(n.uid);
        break;
      }
    uids.push_back(static_cast<jarvis::Uid>(l->trace.events.size() + 5));
    cp::Scenario some;
    some.select.gpu_uids = uids;
    some.factor = 0.3;
    check_same_on(g, scanned, indexed, some);
    check_same(g, indexed, some);
    // The same UIDs in order (a finding's are sorted: the index is walked, not
    // searched per UID), and every GPU node's UID in order.
    cp::Scenario in_order = some;
    std::sort(in_order.select.gpu_uids.begin(), in_order.select.gpu_uids.end());
    check_same_on(g, scanned, indexed, in_order);
    cp::Scenario every = some;
    every.select.gpu_uids.clear();
    for (const auto& [uid, node] : expected) every.select.gpu_uids.push_back(uid);
    check_same_on(g, scanned, indexed, every);
    // By UID and by name at once: the names still decide among the UIDs.
    cp::Scenario named = some;
    named.select.category = "gemm";
    bool any_gemm = true;
    try {
      (void)cp::what_if_step(g, named, scanned);
    } catch (const cp::CriticalPathError&) {
      any_gemm = false;  // none of those kernels is a GEMM: both bases refuse
      CHECK_THROWS_AS(cp::what_if_step(g, named, indexed), cp::CriticalPathError);
    }
    if (any_gemm) check_same_on(g, scanned, indexed, named);

    // Several findings' changes in one replay (a change plan's joint): each
    // selection scales the durations before any; a kernel two of them take
    // keeps the shorter result.
    cp::Scenario joint = some;
    joint.also_scale.push_back({some.select, 0.1});
    cp::Selector gemm;
    gemm.category = "gemm";
    joint.also_scale.push_back({gemm, 0.5});
    check_same_on(g, scanned, indexed, joint);
    cp::Scenario strongest = some;  // the same kernels at the stronger factor alone
    strongest.factor = 0.1;
    cp::Scenario strongest_joint = strongest;
    strongest_joint.also_scale.push_back({gemm, 0.5});
    CHECK(cp::what_if_step(g, joint, indexed).predicted_step_time_us ==
          cp::what_if_step(g, strongest_joint, indexed).predicted_step_time_us);
    cp::Scenario twice = some;  // 0.3, then the same kernels at 0.1: as 0.1 alone
    twice.also_scale.push_back({some.select, 0.1});
    CHECK(cp::what_if_step(g, twice, indexed).predicted_step_time_us ==
          cp::what_if_step(g, strongest, indexed).predicted_step_time_us);
    // Syncs removed: their waits read from the base's (sync_waits), as the
    // replay of the base computes them; with a kernel change beside them.
    cp::Scenario syncs;
    for (const cp::Node& n : g.nodes)
      if (n.kind == cp::NodeKind::SyncReturn) syncs.remove_syncs.emplace_back(n.rank, n.uid);
    if (!syncs.remove_syncs.empty()) {
      CHECK(!indexed.sync_waits.empty());
      check_same_on(g, scanned, indexed, syncs);
      syncs.remove_syncs.resize(syncs.remove_syncs.size() / 2);
      syncs.select = some.select;
      syncs.factor = 0.5;
      check_same_on(g, scanned, indexed, syncs);
    }
    cp::Scenario weaker = strongest;  // 0.1, then the same at 0.3: still 0.1
    weaker.also_scale.push_back({some.select, 0.3});
    CHECK(cp::what_if_step(g, weaker, indexed).predicted_step_time_us ==
          cp::what_if_step(g, strongest, indexed).predicted_step_time_us);
  });
}

TEST_CASE("what-if on an indexed base: the kept copies of its times are put back after a replay") {
  // An indexed base's replays write their scenario into copies of its
  // times that it keeps (WhatIfBase::replay_scratch), put back by the
  // indices written, and read what changed from those marks. Replays in
  // turn, a refused one among them, and two threads at once give what a
  // base without kept copies (a fresh copy each, every value compared) gives.
  for_each_ab_graph([](const std::unique_ptr<BaseLoaded>& l) {
    const cp::Graph& g = l->graph;
    const cp::WhatIfBase scanned = cp::what_if_base(g);
    REQUIRE(!scanned.replay_scratch);
    cp::WhatIfBase indexed = scanned;
    cp::index_for_replays(g, indexed);
    REQUIRE(indexed.replay_scratch);
    std::vector<jarvis::Uid> kernels;
    std::vector<uint32_t> calls;
    for (uint32_t n = 0; n < g.nodes.size(); ++n) {
      if (g.nodes[n].kind == cp::NodeKind::Gpu && g.nodes[n].uid != jarvis::kNoUid && n % 4 == 0)
        kernels.push_back(g.nodes[n].uid);
      if (g.nodes[n].kind == cp::NodeKind::HostCall && g.nodes[n].thread != UINT32_MAX)
        calls.push_back(n);
    }
    REQUIRE(!kernels.empty());
    REQUIRE(!calls.empty());
    std::sort(kernels.begin(), kernels.end());
    kernels.erase(std::unique(kernels.begin(), kernels.end()), kernels.end());
    const double offset =
        g.clock_offset_us.count(g.ranks.front()) ? g.clock_offset_us.at(g.ranks.front()) : 0.0;
    std::vector<cp::Scenario> scenarios(4);
    scenarios[0].select.gpu_uids = kernels;
    scenarios[0].factor = 0.4;
    for (size_t k = 0; k < calls.size(); k += 3) {
      const cp::Node& n = g.nodes[calls[k]];
      scenarios[1].remove_host.push_back(
          {n.rank, n.thread, n.start - offset - 5, n.end() - offset});
      scenarios[2].remove_unrecorded.push_back(
          {n.rank, n.thread, n.start - offset - 30, n.start - offset});
    }
    scenarios[3] = scenarios[0];
    scenarios[3].remove_launch_gaps = true;
    scenarios[3].also_scale.push_back({scenarios[0].select, 0.2});
    cp::Scenario refused;  // selects nothing: refused after its copy was taken
    refused.select.gpu_uids = {static_cast<jarvis::Uid>(l->trace.events.size() + 7)};
    std::vector<cp::WhatIfResult> expected;
    for (const cp::Scenario& sc : scenarios) expected.push_back(cp::what_if_step(g, sc, scanned));
    const auto same = [&](const cp::WhatIfResult& got, size_t k) {
      CAPTURE(k);
      CHECK(got.predicted_step_time_us == expected[k].predicted_step_time_us);
      CHECK(got.removed_us == expected[k].removed_us);
      CHECK(got.changes == expected[k].changes);
    };
    CHECK(expected[0].removed_us > 0);
    CHECK(expected[1].removed_us > 0);
    for (int round = 0; round < 2; ++round)
      for (size_t k = 0; k < scenarios.size(); ++k) {
        same(cp::what_if_step(g, scenarios[k], indexed), k);
        CHECK_THROWS_AS(cp::what_if_step(g, refused, indexed), cp::CriticalPathError);
      }
    // Two at once (insights replays two findings at a time), then in turn.
    std::vector<std::optional<cp::WhatIfResult>> got(2 * scenarios.size());
    {
      std::vector<std::thread> threads;
      for (size_t t = 0; t < 2; ++t)
        threads.emplace_back([&, t] {
          for (size_t k = 0; k < scenarios.size(); ++k)
            got[t * scenarios.size() + k] = cp::what_if_step(g, scenarios[k], indexed);
        });
      for (auto& t : threads) t.join();
    }
    for (size_t k = 0; k < got.size(); ++k) {
      REQUIRE(got[k]);
      same(*got[k], k % scenarios.size());
    }
    for (size_t k = 0; k < scenarios.size(); ++k)
      same(cp::what_if_step(g, scenarios[k], indexed), k);
  });
}

TEST_CASE("propagate: the compact in-edge arrays give the schedule the edges give") {
  for_each_ab_graph([](const std::unique_ptr<BaseLoaded>& l) {
    const cp::Graph& g = l->graph;
    REQUIRE(g.in_from.size() == g.in_edges.size());
    REQUIRE(g.in_kind.size() == g.in_edges.size());
    for (size_t k = 0; k < g.in_edges.size(); ++k) {  // each entry is its edge's
      const cp::Edge& e = g.edges[g.in_edges[k]];
      CHECK(g.in_from[k] == e.from);
      CHECK((g.in_kind[k] & cp::Graph::kInFromStart) ==
            (e.from_start ? cp::Graph::kInFromStart : 0));
      CHECK(static_cast<cp::EdgeKind>(g.in_kind[k] & ~cp::Graph::kInFromStart) == e.kind);
    }
    cp::Graph by_edges = g;  // without the arrays (a graph put together by hand): made by propagate
    by_edges.in_from.clear();
    by_edges.in_kind.clear();
    const cp::WhatIfBase base = cp::what_if_base(g);
    std::vector<double> dur, lag;
    for (const cp::Node& n : g.nodes) dur.push_back(n.dur);
    for (const cp::Edge& e : g.edges) lag.push_back(e.lag);
    const std::vector<std::pair<const std::vector<double>*, const std::vector<double>*>> times{
        {&dur, &lag}, {&base.dur, &base.lag}};  // recorded, un-profiled
    for (const auto& [d, lg] : times) {
      const cp::Schedule a = cp::propagate(g, *d, *lg);
      const cp::Schedule b = cp::propagate(by_edges, *d, *lg);
      CHECK(a.start == b.start);
      CHECK(a.binding == b.binding);
    }
    CHECK(cp::analyse(by_edges).step_time_us == cp::analyse(g).step_time_us);
  });
}

TEST_CASE("what-if on a base: analyse_unprofiled fills it; a graph carries it (s_tf32 A)") {
  auto l = load_ab("s_tf32_A_fp32.json.gz");
  if (!l) return;
  const cp::WhatIfBase alone = cp::what_if_base(l->graph);
  cp::WhatIfBase filled;
  const cp::Analysis unprofiled = cp::analyse_unprofiled(l->graph, filled);
  CHECK(filled.dur == alone.dur);
  CHECK(filled.lag == alone.lag);
  CHECK(filled.step_time_us == alone.step_time_us);
  CHECK(filled.bounds == alone.bounds);
  CHECK(filled.recorded_step_time_us == alone.recorded_step_time_us);
  CHECK(filled.recorded_bounds == alone.recorded_bounds);
  CHECK(unprofiled.step_time_us == cp::analyse_unprofiled(l->graph).step_time_us);
  // A graph carrying its base gives every what-if what the graph alone gives.
  cp::Scenario gemm;
  gemm.select.category = "gemm";
  gemm.factor = 0.5;
  const cp::WhatIfResult before = cp::what_if(l->graph, gemm);
  l->graph.attached_base = std::make_shared<const cp::WhatIfBase>(std::move(filled));
  const cp::WhatIfResult carried = cp::what_if(l->graph, gemm);
  CHECK(carried.measured_step_time_us == before.measured_step_time_us);
  CHECK(carried.predicted_step_time_us == before.predicted_step_time_us);
  CHECK(carried.predicted_profiled_step_time_us == before.predicted_profiled_step_time_us);
  CHECK(carried.summary == before.summary);
  check_same(l->graph, alone, gemm);
}

TEST_CASE("analyse_and_index: both analyses and the indexed base, each as made alone") {
  // A step model's analyses and base made side by side (the recorded
  // analysis beside the un-profiled times and the index's lists; the
  // un-profiled analysis beside the syncs' waits) are those made one after
  // the other.
  for_each_ab_graph([](const std::unique_ptr<BaseLoaded>& l) {
    const cp::Graph& g = l->graph;
    cp::WhatIfBase alone;
    const cp::Analysis recorded = cp::analyse(g);
    const cp::Analysis unprofiled = cp::analyse_unprofiled(g, alone, recorded);
    cp::index_for_replays(g, alone);
    cp::WhatIfBase side;
    const cp::BothAnalyses both = cp::analyse_and_index(g, side);
    for (const auto& [x, y] :
         {std::pair{&both.recorded, &recorded}, {&both.unprofiled, &unprofiled}}) {
      CHECK(x->step_time_us == y->step_time_us);
      CHECK(x->summary == y->summary);
      CHECK(x->notes == y->notes);
      CHECK(x->profiler_host_us_per_step == y->profiler_host_us_per_step);
      CHECK(bounds(*x) == bounds(*y));
      REQUIRE(x->iterations.size() == y->iterations.size());
      for (size_t k = 0; k < x->iterations.size(); ++k)
        CHECK(x->iterations[k].path.size() == y->iterations[k].path.size());
    }
    CHECK(both.unprofiled.model == cp::kModelUnprofiled);
    CHECK(side.dur == alone.dur);
    CHECK(side.lag == alone.lag);
    CHECK(side.step_time_us == alone.step_time_us);
    CHECK(side.bounds == alone.bounds);
    CHECK(side.recorded_step_time_us == alone.recorded_step_time_us);
    CHECK(side.recorded_bounds == alone.recorded_bounds);
    CHECK(side.gpu_nodes_by_uid == alone.gpu_nodes_by_uid);
    REQUIRE(side.sync_waits.size() == alone.sync_waits.size());
    for (size_t k = 0; k < side.sync_waits.size(); ++k) {
      CHECK(side.sync_waits[k].rank == alone.sync_waits[k].rank);
      CHECK(side.sync_waits[k].uid == alone.sync_waits[k].uid);
      CHECK(side.sync_waits[k].wait_us == alone.sync_waits[k].wait_us);
    }
    CHECK(side.sync_edges == alone.sync_edges);
    CHECK(side.host_edges == alone.host_edges);
    CHECK(side.host_calls == alone.host_calls);
    CHECK(side.sync_returns == alone.sync_returns);
    CHECK(side.indexed_for_replays);
    CHECK(side.host_runs);
    CHECK(side.replay_scratch);
    cp::Scenario gemm;
    gemm.select.category = "gemm";
    gemm.factor = 0.5;
    check_same_on(g, alone, side, gemm);
  });
}

TEST_CASE("what-if on a base: a base of another graph is refused") {
  auto a = load_ab("s_tf32_A_fp32.json.gz");
  auto b = load_ab("s_mask_sync_A_boolean_index.json.gz");
  if (!a || !b) return;
  REQUIRE(a->graph.nodes.size() != b->graph.nodes.size());
  cp::Scenario gemm;
  gemm.select.category = "gemm";
  gemm.factor = 0.5;
  CHECK_THROWS_AS(cp::what_if(a->graph, gemm, cp::what_if_base(b->graph)), cp::CriticalPathError);
}

TEST_CASE("host removal: the indexed base's sync calls, and events given by UID, as the scans") {
  size_t loaded = 0, with_syncs = 0;
  for_each_ab_graph([&](const std::unique_ptr<BaseLoaded>& l) {
    ++loaded;
    cp::Graph& g = l->graph;
    REQUIRE(!g.attached_base);
    // The synchronising calls the graph split, from its nodes.
    std::vector<std::pair<int64_t, jarvis::Uid>> syncs;
    std::vector<std::string> ops;  // the cpu_ops holding them, by name
    for (const cp::Node& n : g.nodes) {
      if (n.kind != cp::NodeKind::SyncReturn) continue;
      syncs.emplace_back(n.rank, n.uid);
      const jarvis::Uid op = l->tree->parent(n.uid);
      if (op != jarvis::kNoUid && l->trace.events[op].cat == jarvis::Cat::CpuOp &&
          std::find(ops.begin(), ops.end(), l->trace.name(op)) == ops.end())
        ops.emplace_back(l->trace.name(op));
    }
    std::sort(syncs.begin(), syncs.end());
    syncs.erase(std::unique(syncs.begin(), syncs.end()), syncs.end());
    auto base = std::make_shared<cp::WhatIfBase>(cp::what_if_base(g));
    cp::index_for_replays(g, *base);
    CHECK(base->sync_returns == syncs);
    if (ops.empty()) return;
    ++with_syncs;
    // Those ops by name, and the same events by UID (every host event of
    // those names, as the name scan matches them).
    cp::HostRemoval by_name, by_uid;
    by_name.ops = ops;
    for (jarvis::Uid u = 0; u < l->trace.events.size(); ++u) {
      const jarvis::Event& e = l->trace.events[u];
      if (e.cat == jarvis::Cat::CpuOp && e.has_ts() && e.has_dur() &&
          std::find(ops.begin(), ops.end(), l->trace.name(u)) != ops.end())
        by_uid.uids.push_back(u);
    }
    const std::vector<cp::RankInput> inputs{{&l->trace, l->tree.get(), -1}};
    const auto same = [](const cp::Scenario& a, const cp::Scenario& b) {
      CHECK(a.remove_syncs == b.remove_syncs);
      REQUIRE(a.remove_host.size() == b.remove_host.size());
      for (size_t k = 0; k < a.remove_host.size(); ++k) {
        CHECK(a.remove_host[k].thread == b.remove_host[k].thread);
        CHECK(a.remove_host[k].from_us == b.remove_host[k].from_us);
        CHECK(a.remove_host[k].to_us == b.remove_host[k].to_us);
      }
      CHECK(a.remove_gpu == b.remove_gpu);
    };
    cp::Scenario scanned_names, scanned_uids, listed_names, listed_uids;
    const auto matched = cp::add_host_removal(inputs, g, by_name, scanned_names);
    (void)cp::add_host_removal(inputs, g, by_uid, scanned_uids);
    g.attached_base = base;  // the sync calls looked up in its list
    (void)cp::add_host_removal(inputs, g, by_name, listed_names);
    (void)cp::add_host_removal(inputs, g, by_uid, listed_uids);
    g.attached_base.reset();
    CHECK(matched.syncs > 0);
    CHECK(matched.events == by_uid.uids.size());
    same(scanned_names, scanned_uids);
    same(scanned_names, listed_names);
    same(scanned_names, listed_uids);
    CHECK(listed_names.host_removal == scanned_names.host_removal);
    CHECK(listed_uids.host_removal == scanned_uids.host_removal);
  });
  if (loaded > 0) CHECK(with_syncs > 0);  // s_mask_sync A's nonzero syncs
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
