// Issue 74 point 7: the critical path's graph took time quadratic in the host
// threads (5.9 s on 30,000 threads, 22.7 s on 60,000): every host gap of a
// waiting thread looked at every other thread's records. Now a gap looks
// only at the threads that recorded something in it (or, past
// HostCostIndex::kMaxScannedMarks records, at the costliest threads), and the
// figures stay those of the definition: the most any one other thread of the
// process recorded in the gap, worked here from the trace's own events.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

#include "critical_path/critical_path.h"
#include "critical_path/internal.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;
using jarvis::CallTree;
using jarvis::Trace;

constexpr double kPeriodUs = 200;

// `threads` worker threads (tids 2..), each running one cpu_op around one
// kernel launch, one every kPeriodUs; the main thread (tid 1) launches a
// kernel of its own (a new one each time: no repeating launch sequence, so
// no iteration marks) half a period later and records nothing between: each
// of its gaps is a wait through one worker's op.
std::string many_threads_trace(size_t threads) {
  std::string events;
  for (size_t k = 0; k < threads; ++k) {
    const double ts = static_cast<double>(k) * kPeriodUs;
    const size_t worker = k + 1, main = threads + k + 1;  // correlation ids
    events += fmt::format(
        R"({{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":{0},"ts":{1},"dur":5}},)"
        R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":{0},)"
        R"("ts":{2},"dur":1,"args":{{"correlation":{3}}}}},)"
        R"({{"ph":"X","cat":"kernel","name":"add","pid":0,"tid":7,"ts":{4},"dur":2,)"
        R"("args":{{"correlation":{3},"stream":7,"device":0}}}},)"
        R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,)"
        R"("ts":{5},"dur":1,"args":{{"correlation":{6}}}}},)"
        R"({{"ph":"X","cat":"kernel","name":"main_{8}","pid":0,"tid":7,"ts":{7},"dur":2,)"
        R"("args":{{"correlation":{6},"stream":7,"device":0}}}},)",
        k + 2, ts, ts + 1, worker, ts + 3, ts + kPeriodUs / 2, main, ts + kPeriodUs / 2 + 3, k);
  }
  events.pop_back();  // the last comma
  return R"({"traceEvents":[)" + events + "]}";
}

// Worker threads with one cpu_op each (no launches), kPeriodUs apart.
std::string ops_only_trace(size_t threads) {
  std::string events;
  for (size_t k = 0; k < threads; ++k)
    events += fmt::format(
        R"({{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":{},"ts":{},"dur":5}},)",
        k + 2, static_cast<double>(k) * kPeriodUs);
  // The thread that waits (tid 1): one op at the start.
  events += R"({"ph":"X","cat":"cpu_op","name":"aten::mul","pid":1,"tid":1,"ts":0,"dur":1})";
  return R"({"traceEvents":[)" + events + "]}";
}

TEST_CASE("issue 74 point 7: a gap's cost on other threads looks only at the threads in it") {
  constexpr size_t kThreads = 5000;
  const Trace trace = jarvis::load_trace_from_json(ops_only_trace(kThreads));
  const CallTree tree(trace);
  const cp::ProfilerCost cost = cp::measure_profiler_cost(trace, tree);
  REQUIRE(cost.ops == kThreads + 1);
  const cp::detail::HostCostIndex index(trace, cost);
  uint32_t waiting = UINT32_MAX;  // Event::thread of tid 1
  for (jarvis::Uid u = 0; u < trace.events.size(); ++u)
    if (trace.name(u) == "aten::mul") waiting = trace.events[u].thread;
  REQUIRE(waiting != UINT32_MAX);

  // Each window around one worker's op: that op's enter and exit records.
  for (size_t k = 0; k < kThreads; k += 7) {
    const double ts = static_cast<double>(k) * kPeriodUs;
    CHECK(index.on_other_threads(waiting, ts - 10, ts + 10) == doctest::Approx(cost.per_op_us));
    // Only its enter record: half of it.
    CHECK(index.on_other_threads(waiting, ts - 10, ts + 1) == doctest::Approx(cost.per_op_us / 2));
    // Between two ops: nothing.
    CHECK(index.on_other_threads(waiting, ts + 10, ts + 150) == 0.0);
  }
  // One thread looked at per window that holds one op, none for the empty ones.
  const size_t windows = (kThreads + 6) / 7;
  CHECK(index.threads_evaluated() == 2 * windows);

  // A window over every op: more records than are scanned, so the costliest
  // threads are looked at, and the first whose whole cost is in the window
  // settles it (every worker recorded the same).
  const size_t before = index.threads_evaluated();
  CHECK(index.on_other_threads(waiting, -10, kThreads * kPeriodUs) ==
        doctest::Approx(cost.per_op_us));
  CHECK(index.threads_evaluated() - before <= 2);
  // The asking thread itself is never counted: the first worker's window at
  // the start holds its own enter record and the waiting thread's.
  uint32_t first_worker = UINT32_MAX;
  for (jarvis::Uid u = 0; u < trace.events.size(); ++u)
    if (trace.name(u) == "aten::add" && trace.events[u].ts() == 0)
      first_worker = trace.events[u].thread;
  REQUIRE(first_worker != UINT32_MAX);
  CHECK(index.on_other_threads(first_worker, -1, 0.5) == doctest::Approx(cost.per_op_us / 2));
}

// The graph of a `threads`-thread trace, and the seconds build_graph took
// (the best of `runs`).
double build_seconds(size_t threads, int runs, cp::Graph* keep = nullptr) {
  const Trace trace = jarvis::load_trace_from_json(many_threads_trace(threads));
  const CallTree tree(trace);
  double best = 1e300;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    cp::Graph g = cp::build_graph({{&trace, &tree, -1}});
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (keep) *keep = std::move(g);
  }
  return best;
}

TEST_CASE("issue 74 point 7: each wait of the main thread is charged the op it waited through") {
  constexpr size_t kThreads = 2000;
  cp::Graph g;
  build_seconds(kThreads, 1, &g);
  const cp::ProfilerCost& cost = g.profiler_cost.at(g.ranks.front());
  // The main thread's gaps between its launches (HostSeq edges of 199 us:
  // the workers have one call each, so no gaps) each hold one worker's op
  // and launch: the op's two records and half the launch's callback.
  size_t checked = 0;
  for (const cp::Edge& e : g.edges) {
    if (e.kind != cp::EdgeKind::HostSeq || e.intrinsic < 100) continue;
    CHECK(e.intrinsic == doctest::Approx(kPeriodUs - 1));
    CHECK(e.profiler_us == doctest::Approx(cost.per_op_us + cost.per_runtime_call_us / 2));
    ++checked;
  }
  CHECK(checked == kThreads - 1);
}

// The what-if that removes every worker's op on a `threads`-thread trace,
// and the seconds what_if took (the best of `runs`).
double removal_seconds(size_t threads, int runs, cp::WhatIfResult* keep = nullptr) {
  const Trace trace = jarvis::load_trace_from_json(many_threads_trace(threads));
  const CallTree tree(trace);
  const std::vector<cp::RankInput> inputs = {{&trace, &tree, -1}};
  const cp::Graph g = cp::build_graph(inputs);
  cp::Scenario scenario;
  cp::HostRemoval removal;
  removal.ops = {"aten::add"};
  const cp::HostRemovalMatch match = cp::add_host_removal(inputs, g, removal, scenario);
  REQUIRE(match.events == threads);
  double best = 1e300;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    cp::WhatIfResult result = cp::what_if(g, scenario);
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (keep) *keep = std::move(result);
  }
  return best;
}

TEST_CASE("issue 74 point 7: removing one op on each of many threads removes each launch") {
  constexpr size_t kThreads = 2000;
  cp::WhatIfResult r;
  removal_seconds(kThreads, 1, &r);
  // Each worker's launch lies inside its removed op: every one goes.
  const std::string expected = fmt::format("{} runtime call(s) in them", kThreads);
  CHECK(std::any_of(r.changes.begin(), r.changes.end(),
                    [&](const std::string& c) { return c.find(expected) != std::string::npos; }));
}

// The scaling itself (twice the threads, about twice the time) is a
// benchmark, not a timed unit test: bench/many_threads.py prints it.

}  // namespace JARVIS_TEST_FILE
}  // namespace
