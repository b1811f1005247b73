// HostCostIndex (src/critical_path/host_cost.cpp): the profiler's cost of
// what each host thread recorded in a time window, as build_graph charges it
// to a host gap, against its definition worked from the trace's raw events:
// an op's (or Python frame's) cost half where it enters and half where it
// exits, a [memory] event's where it is, a runtime call's half just before
// it starts (the other half is inside the call). A process with few
// recording threads counts a window's records thread by thread; the figures
// are those of the definition either way (test_many_threads.cpp checks a
// process of 5,000 threads).
#include <doctest/doctest.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "critical_path/critical_path.h"
#include "critical_path/internal.h"
#include "golden.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;
using jarvis::Cat;
using jarvis::Event;
using jarvis::Trace;
using jarvis::Uid;

// One record's cost, placed in time; `before` for a runtime call's, which
// falls just before its start: in [from, to) when from < t <= to.
struct Record {
  double t = 0;
  double cost = 0;
  bool before = false;
  bool in(double from, double to) const {
    return before ? from < t && t <= to : from <= t && t < to;
  }
};

// Each thread's records (by Event::thread), from the events and the cost model.
std::map<uint32_t, std::vector<Record>> records_of(const Trace& trace, const cp::ProfilerCost& c) {
  std::map<uint32_t, std::vector<Record>> out;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (!e.has_ts()) continue;
    auto& r = out[e.thread];
    if (e.is_runtime()) {
      r.push_back({e.ts(), c.per_runtime_call_us / 2, true});
    } else if (e.cat == Cat::CpuOp || e.cat == Cat::PythonFunction) {
      double each = e.cat == Cat::PythonFunction ? c.per_python_frame_us / 2 : c.per_op_us / 2;
      if (e.cat == Cat::CpuOp && c.per_input_us != 0)
        if (const jarvis::PyValue* dims = trace.arg(u, "Input Dims"); dims && dims->is_seq())
          each += c.per_input_us * static_cast<double>(dims->size()) / 2;
      r.push_back({e.ts(), each});
      if (e.has_dur()) r.push_back({e.end(), each});
    } else if (e.cat == Cat::CpuInstantEvent && trace.name(u) == "[memory]") {
      r.push_back({e.ts(), c.per_memory_event_us});
    }
  }
  return out;
}

double sum_in(const std::vector<Record>& records, double from, double to) {
  double sum = 0;
  for (const Record& r : records)
    if (r.in(from, to)) sum += r.cost;
  return sum;
}

// Checks between() and on_other_threads() over windows of every thread: the
// gaps between its consecutive runtime calls (what build_graph asks), every
// `stride`-th of them.
void check_trace(const Trace& trace, size_t stride) {
  const jarvis::CallTree tree(trace);
  const cp::ProfilerCost cost = cp::measure_profiler_cost(trace, tree);
  const cp::detail::HostCostIndex index(trace, cost);
  const auto records = records_of(trace, cost);
  REQUIRE(records.size() >= 2);  // a process of several recording threads
  REQUIRE(records.size() <= cp::detail::HostCostIndex::kMaxCountedThreads);
  std::map<uint32_t, std::vector<double>> calls;  // thread -> runtime call starts
  for (const Event& e : trace.events)
    if (e.is_runtime() && e.has_ts()) calls[e.thread].push_back(e.ts());
  size_t windows = 0, nonzero = 0;
  for (auto& entry : calls) {  // no structured binding: clang 14 cannot capture one in CHECK
    const uint32_t thread = entry.first;
    std::vector<double>& starts = entry.second;
    std::sort(starts.begin(), starts.end());
    // Searched from where the last window of the thread was found (a cursor,
    // as build_graph walks a thread's gaps): the same figure as the search
    // of all the thread's marks, windows in time order or backwards, or
    // spanning several gaps.
    cp::detail::HostCostIndex::Cursor forward, backward, wide;
    for (size_t k = 1; k < starts.size(); ++k) {
      const double from = starts[k - 1], to = starts[k];
      CHECK(index.between(thread, from, to, forward) == index.between(thread, from, to));
      const double back_from = starts[starts.size() - 1 - k], back_to = starts[starts.size() - k];
      CHECK(index.between(thread, back_from, back_to, backward) ==
            index.between(thread, back_from, back_to));
      const double far = starts[std::min(starts.size() - 1, 3 * k)];
      CHECK(index.between(thread, from, far, wide) == index.between(thread, from, far));
    }
    for (size_t k = 1; k < starts.size(); k += stride) {
      const double from = starts[k - 1], to = starts[k];
      const double own = sum_in(records.at(thread), from, to);
      CHECK(index.between(thread, from, to) == doctest::Approx(own));
      double most = 0;
      size_t others = 0, in_window = 0;  // other threads with a record in it; its records
      for (const auto& [other, r] : records) {
        if (trace.threads[other].pid.value != trace.threads[thread].pid.value) continue;
        const auto n =
            std::count_if(r.begin(), r.end(), [&](const Record& x) { return x.in(from, to); });
        in_window += static_cast<size_t>(n);
        if (other == thread) continue;
        most = std::max(most, sum_in(r, from, to));
        others += n > 0;
      }
      const size_t evaluated = index.threads_evaluated();
      CHECK(index.on_other_threads(thread, from, to) == doctest::Approx(most));
      // Each other thread with a record in the window looked at once (past
      // kMaxScannedMarks records, the costliest threads instead).
      if (in_window <= cp::detail::HostCostIndex::kMaxScannedMarks)
        CHECK(index.threads_evaluated() - evaluated == others);
      ++windows;
      nonzero += own > 0;
    }
  }
  CHECK(windows > 20);
  CHECK(nonzero > 0);
}

// Ops in enter order as a random forest (each op inside the one before it,
// or after it and some of its parents), with some ops that overlap without
// nesting and ties of time and cost: the exit marks, listed in enter order,
// come out as std::sort orders them.
TEST_CASE("order_exit_marks: a thread's exits in (time, cost) order, nested or not") {
  std::mt19937 rng(75);
  size_t nested_runs = 0;
  for (int round = 0; round < 200; ++round) {
    const bool only_nesting = round % 2 == 0;
    std::vector<std::pair<double, double>> exits;
    std::vector<double> open_ends;  // the ends of the ops the next one may sit inside
    double now = 0;
    const size_t ops = 1 + rng() % 400;
    for (size_t k = 0; k < ops; ++k) {
      // Close some of the open ops before this one enters.
      while (!open_ends.empty() && rng() % 3 == 0) {
        now = open_ends.back();
        open_ends.pop_back();
      }
      const double limit = open_ends.empty() ? now + 1000 : open_ends.back();
      now = std::min(now + static_cast<double>(rng() % 3), limit);  // ties of enter times too
      double end = now + static_cast<double>(rng() % (static_cast<unsigned>(limit - now) + 1));
      if (!only_nesting && rng() % 10 == 0) end = limit + static_cast<double>(rng() % 50);
      const double cost = static_cast<double>(rng() % 4) * 0.25;  // ties of cost
      exits.emplace_back(end, cost);
      if (end <= limit) open_ends.push_back(end);
    }
    std::vector<std::pair<double, double>> expected = exits;
    std::sort(expected.begin(), expected.end());
    cp::detail::order_exit_marks(exits);
    CHECK(exits == expected);
    nested_runs += only_nesting;
  }
  CHECK(nested_runs == 100);
}

TEST_CASE("HostCostIndex: a window's cost per thread is the sum of its records there") {
  // BERT inference with Python frames and [memory] events: two recording
  // threads (the main thread and autograd's), no record_shapes.
  const Trace bert = jarvis::load_trace(jarvis::golden::shared_dir() +
                                        "/conformance/h100_bert-small/trace.json.gz");
  check_trace(bert, 1);
  // GPT-2 training with record_shapes (an op's inputs add to its cost) and
  // profile_memory: the two threads of a training step.
  const std::string gpt2 =
      jarvis::golden::configured_shared_dir() + "/ab_pairs/s_overhead_gpt2_shapes_memory.json.gz";
  if (!std::filesystem::exists(gpt2)) {
    MESSAGE("skipped the GPT-2 half: ../shared/ab_pairs is not here");
    return;
  }
  check_trace(jarvis::load_trace(gpt2), 5);
}

// A trace listed in copies, as bench/tile_trace.py makes them (each copy's
// events after the last's, later in time): a thread's ops, and its runtime
// calls, then come in one time-ordered run per copy, interleaved with each
// other's runs. The index merges the kinds of marks apart; its windows hold
// the definition's figures all the same.
TEST_CASE("HostCostIndex: a trace listed in copies, each thread's marks in runs per copy") {
  Trace tiled = jarvis::load_trace(jarvis::golden::shared_dir() +
                                   "/conformance/h100_bert-small/trace.json.gz");
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const Event& e : tiled.events)
    if (e.has_ts()) {
      first = std::min(first, e.ts_ns);
      last = std::max(last, e.ts_ns + (e.has_dur() ? e.dur_ns : 0));
    }
  const size_t one_copy = tiled.events.size();
  const int64_t shift = last - first + 1'000'000;  // a millisecond after the copy before
  tiled.events.reserve(3 * one_copy);
  for (int64_t copy = 1; copy < 3; ++copy)
    for (size_t k = 0; k < one_copy; ++k) {
      Event e = tiled.events[k];
      if (e.has_ts()) e.ts_ns += copy * shift;
      tiled.events.push_back(e);
    }
  // Out of time order as listed: on some thread, an op or runtime call
  // listed after one that starts later.
  size_t listed_early = 0;
  std::map<uint32_t, double> latest;  // thread -> the latest start listed so far
  for (const Event& e : tiled.events) {
    if (!e.has_ts() || !(e.is_runtime() || e.cat == Cat::CpuOp)) continue;
    auto [it, added] = latest.emplace(e.thread, e.ts());
    if (!added && e.ts() < it->second) ++listed_early;
    it->second = std::max(it->second, e.ts());
  }
  CHECK(listed_early > 0);
  check_trace(tiled, 3);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
