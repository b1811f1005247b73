// The profiler's cost of the events each host thread recorded, summed over
// time intervals (internal.h, HostCostIndex): the host gaps of the critical
// path's graph take their profiler share from it (build_graph).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

#include "base/huge_pages.h"
#include "base/phase_timer.h"
#include "base/search_near.h"
#include "base/sort_runs.h"
#include "base/two_threads.h"
#include "critical_path/critical_path.h"
#include "critical_path/internal.h"

namespace jarvis::critical_path::detail {
namespace {

// The inputs an op recorded with record_shapes ("Input Dims" entries), as
// Trace::arg finds them, with the key's string id looked up once (`key`:
// none when no event has the key).
size_t host_cost_inputs_of(const Trace& trace, const Event& e, std::optional<uint32_t> key) {
  if (!key || e.args < 0) return 0;
  for (const auto& [k, v] : trace.arg_lists[static_cast<size_t>(e.args)])
    if (k == *key) return v.is_seq() ? v.size() : 0;
  return 0;
}

}  // namespace

// A thread's exit marks, listed in their ops' enter order, put in (time,
// cost) order. Nested ops exit in reverse of their entering (a parent after
// its children): one pass with a stack of the marks not yet due (as deep as
// the nesting) puts a nesting's exits in order, in place; what is left out
// of order (ops that overlap without nesting) is merged in by
// stable_sort_runs. The sorted sequence std::sort gave (equal marks are
// alike), without its O(n log n) (x256: 57 ms, alone on the graph's path).
void order_exit_marks(std::vector<std::pair<double, double>>& exits) {
  std::vector<std::pair<double, double>> due_later;  // non-increasing: the earliest on top
  size_t w = 0;
  for (size_t i = 0; i < exits.size(); ++i) {
    const std::pair<double, double> mark = exits[i];
    while (!due_later.empty() && due_later.back() < mark) {
      exits[w++] = due_later.back();
      due_later.pop_back();
    }
    due_later.push_back(mark);
  }
  while (!due_later.empty()) {
    exits[w++] = due_later.back();
    due_later.pop_back();
  }
  stable_sort_runs(exits.begin(), exits.end());
}

HostCostIndex::HostCostIndex(const Trace& trace, const ProfilerCost& cost) {
  uint32_t memory_name = 0;
  const bool any_memory = trace.strings.find("[memory]", memory_name);
  const size_t threads = trace.threads.size();
  marks_.resize(threads);
  pid_.resize(threads);
  for (size_t t = 0; t < threads; ++t) pid_[t] = trace.threads[t].pid.value;
  // Without record_shapes an op's inputs cost nothing: their count is not read.
  const bool inputs_cost = cost.per_input_us != 0;
  std::optional<uint32_t> dims_key;
  if (uint32_t id = 0; trace.strings.find("Input Dims", id)) dims_key = id;
  // The marks an event leaves: none (0), one where it is (1: a runtime call, a
  // memory event, an op without a duration), or an enter and an exit (2).
  auto marks_left = [&](const Event& e) {
    if (!e.has_ts()) return 0;
    if (e.is_runtime()) return 1;
    if (e.cat == Cat::CpuOp || e.cat == Cat::PythonFunction) return e.has_dur() ? 2 : 1;
    return any_memory && e.cat == Cat::CpuInstantEvent && e.name == memory_name ? 1 : 0;
  };
  // Counted first, so that each thread's marks are allocated once, on huge
  // pages (grown by doubling, they were copied and faulted in at up to twice
  // their size, a fault per 4 KiB).
  // Enter marks come in about the trace's time order; the exit marks of
  // nested ops do not, and are sorted apart, then merged in.
  std::vector<size_t> enters(threads, 0), exits(threads, 0), runtime_calls(threads, 0);
  for (const Event& e : trace.events) {
    const int n = marks_left(e);
    enters[e.thread] += n > 0;
    exits[e.thread] += n > 1;
    runtime_calls[e.thread] += n > 0 && e.is_runtime();
  }
  // The threads' marks are independent: two groups of threads, of about as
  // many marks each, are filled on two threads (a training step records its
  // forward ops on the main thread and its backward ops on autograd's).
  std::vector<uint8_t> group(threads, 0);
  {
    std::vector<uint32_t> by_marks;
    for (uint32_t t = 0; t < threads; ++t)
      if (enters[t] > 0) by_marks.push_back(t);
    std::sort(by_marks.begin(), by_marks.end(), [&](uint32_t a, uint32_t b) {
      return enters[a] + exits[a] != enters[b] + exits[b]
                 ? enters[a] + exits[a] > enters[b] + exits[b]
                 : a < b;
    });
    size_t in_group[2] = {0, 0};
    for (uint32_t t : by_marks) {
      const uint8_t g = in_group[1] < in_group[0] ? 1 : 0;
      group[t] = g;
      in_group[g] += enters[t] + exits[t];
    }
  }
  // A thread's runtime calls and its ops each come in time order in a Kineto
  // trace, but one after the other (a tiled trace: in a run each per copy):
  // kept apart, each is sorted already, and the three kinds of marks merge
  // in two linear passes (one sort of them all merged 2 x 257 runs at x256,
  // 9 passes through a buffer as large as the marks).
  std::vector<std::vector<std::pair<double, double>>> exit_marks(threads), runtime_marks(threads);
  auto fill_group = [&](uint8_t g) {
    for (size_t t = 0; t < threads; ++t) {
      if (group[t] != g || enters[t] == 0) continue;
      marks_[t].reserve(enters[t] + exits[t]);
      exit_marks[t].reserve(exits[t]);
      runtime_marks[t].reserve(runtime_calls[t]);
      advise_huge_pages(marks_[t].data(), marks_[t].capacity() * sizeof(marks_[t][0]));
      advise_huge_pages(exit_marks[t].data(), exit_marks[t].capacity() * sizeof(exit_marks[t][0]));
      advise_huge_pages(runtime_marks[t].data(),
                        runtime_marks[t].capacity() * sizeof(runtime_marks[t][0]));
    }
    // An op's or frame's cost falls half where it enters, half where it
    // exits; a memory event's where it is.
    for (Uid u = 0; u < trace.events.size(); ++u) {
      const Event& e = trace.events[u];
      if (group[e.thread] != g) continue;
      const int n = marks_left(e);
      if (n == 0) continue;
      auto& marks = marks_[e.thread];
      if (e.is_runtime()) {
        // Half of a runtime call's cost falls inside the call (its node's
        // profiler_us), half in the host gap before it.
        runtime_marks[e.thread].emplace_back(std::nextafter(e.ts(), -1e300),
                                             cost.per_runtime_call_us / 2);
        continue;
      }
      double each = 0;
      if (e.cat == Cat::CpuOp)
        each = (cost.per_op_us +
                (inputs_cost ? cost.per_input_us *
                                   static_cast<double>(host_cost_inputs_of(trace, e, dims_key))
                             : 0.0)) /
               2;
      else if (e.cat == Cat::PythonFunction)
        each = cost.per_python_frame_us / 2;
      else
        each = cost.per_memory_event_us;
      marks.emplace_back(e.ts(), each);
      if (n == 2 && e.cat != Cat::CpuInstantEvent) exit_marks[e.thread].emplace_back(e.end(), each);
    }
  };
  std::optional<PhaseTimer> timer(std::in_place, "critical_path/host_cost/fill");
  run_on_two_threads({[&] { fill_group(0); }, [&] { fill_group(1); }});
  timer.emplace("critical_path/host_cost/sort");
  // Each thread's marks in (time, cost) order, then their running totals:
  // the same sequence as one sort of all of them (equal marks are alike).
  // One thread at a time: two sorts' buffers at once raised the peak by
  // 7 MB at x32 (a tenth of the report's) for 10 ms.
  for (uint32_t thread = 0; thread < threads; ++thread) {
    auto& marks = marks_[thread];
    if (marks.empty() && runtime_marks[thread].empty()) continue;
    stable_sort_runs(marks.begin(), marks.end());
    stable_sort_runs(runtime_marks[thread].begin(), runtime_marks[thread].end());
    // Each merged into the room reserved after the enter marks, then freed.
    merge_into_back(marks, runtime_marks[thread]);
    std::vector<std::pair<double, double>>().swap(runtime_marks[thread]);
    order_exit_marks(exit_marks[thread]);
    merge_into_back(marks, exit_marks[thread]);
    std::vector<std::pair<double, double>>().swap(exit_marks[thread]);
    double sum = 0;
    for (auto& m : marks) m.second = sum += m.second;  // running total at each mark
  }
  timer.emplace("critical_path/host_cost/processes");
  std::map<int64_t, std::vector<uint32_t>> threads_of;  // each process's threads with marks
  for (uint32_t thread = 0; thread < threads; ++thread)
    if (!marks_[thread].empty()) threads_of[pid_[thread]].push_back(thread);
  for (auto& [pid, process_threads] : threads_of) {
    ProcessMarks& p = processes_[pid];
    p.by_cost = process_threads;
    std::stable_sort(p.by_cost.begin(), p.by_cost.end(),
                     [&](uint32_t a, uint32_t b) { return total(a) > total(b); });
    if (process_threads.size() <= kMaxCountedThreads) continue;  // counted per thread (most_in)
    // Every mark of the process by (time, thread): the threads' marks are in
    // time order already, so they merge (a heap of the threads' next marks).
    size_t total_marks = 0;
    for (uint32_t thread : process_threads) total_marks += marks_[thread].size();
    p.by_time.reserve(total_marks);
    using Next = std::pair<std::pair<double, uint32_t>, size_t>;  // ((time, thread), position)
    std::priority_queue<Next, std::vector<Next>, std::greater<>> heads;
    for (uint32_t thread : process_threads) heads.push({{marks_[thread].front().first, thread}, 0});
    while (!heads.empty()) {
      const auto [mark, pos] = heads.top();
      heads.pop();
      p.by_time.push_back(mark);
      const auto& marks = marks_[mark.second];
      if (pos + 1 < marks.size()) heads.push({{marks[pos + 1].first, mark.second}, pos + 1});
    }
  }
}

double HostCostIndex::total(uint32_t thread) const {
  const auto* marks = marks_of(thread);
  return marks ? marks->back().second : 0.0;
}

double HostCostIndex::between(uint32_t thread, double from, double to, Cursor& near) const {
  const auto* found = marks_of(thread);
  if (!found || !(to > from)) return 0;
  const auto& marks = *found;
  // The position of the first mark at `t` or later, searched from `hint`.
  const auto position = [&](double t, size_t hint) {
    const auto at = marks.begin() + static_cast<std::ptrdiff_t>(std::min(hint, marks.size()));
    return static_cast<size_t>(
        lower_bound_near(marks.begin(), marks.end(), at, std::make_pair(t, -1e300)) -
        marks.begin());
  };
  near.from = position(from, near.from);
  near.to = position(to, std::max(near.to, near.from));
  // the cost of the marks before each: the running total of the one before it
  const auto total_before = [&](size_t pos) { return pos == 0 ? 0.0 : marks[pos - 1].second; };
  return total_before(near.to) - total_before(near.from);
}

double HostCostIndex::between(uint32_t thread, double from, double to) const {
  Cursor anywhere{SIZE_MAX, SIZE_MAX};  // from the end: a binary search of all the marks
  return between(thread, from, to, anywhere);
}

double HostCostIndex::on_other_threads(uint32_t thread, double from, double to) const {
  if (!(to > from)) return 0;
  const bool own = marks_of(thread) != nullptr;
  double most = 0;
  for (const auto& [pid, p] : processes_)  // a thread that recorded nothing: every process
    if (!own || pid_[thread] == pid) most = std::max(most, most_in(p, thread, from, to));
  return most;
}

// Only the threads with a record in [from, to) can have cost there: those
// are found among the interval's records when it holds few, else among the
// costliest threads, stopping at the first whose whole cost cannot win.
double HostCostIndex::most_in(const ProcessMarks& p, uint32_t thread, double from,
                              double to) const {
  double most = 0;
  // The interval's records: counted per thread (few threads), or found in
  // the process's time-ordered list of them.
  std::vector<uint32_t> present;
  size_t records = 0;
  if (p.by_cost.size() <= kMaxCountedThreads) {
    for (uint32_t other : p.by_cost) {
      const auto& marks = marks_[other];
      auto lo = std::lower_bound(marks.begin(), marks.end(), std::make_pair(from, -1e300));
      auto hi = std::lower_bound(lo, marks.end(), std::make_pair(to, -1e300));
      records += static_cast<size_t>(hi - lo);
      if (hi != lo && other != thread) present.push_back(other);
    }
  } else {
    const auto lo = std::lower_bound(p.by_time.begin(), p.by_time.end(), std::make_pair(from, 0u));
    const auto hi = std::lower_bound(lo, p.by_time.end(), std::make_pair(to, 0u));
    records = static_cast<size_t>(hi - lo);
    if (records <= kMaxScannedMarks)
      for (auto it = lo; it != hi; ++it)
        if (it->second != thread) present.push_back(it->second);
  }
  if (records <= kMaxScannedMarks) {
    std::sort(present.begin(), present.end());
    present.erase(std::unique(present.begin(), present.end()), present.end());
    for (uint32_t other : present) most = std::max(most, between(other, from, to));
    threads_evaluated_ += present.size();
    return most;
  }
  size_t evaluated = 0;
  for (uint32_t other : p.by_cost) {
    if (total(other) <= most || evaluated == kMaxCostliestThreads) break;
    if (other == thread) continue;
    most = std::max(most, between(other, from, to));
    ++evaluated;
  }
  threads_evaluated_ += evaluated;
  return most;
}

}  // namespace jarvis::critical_path::detail
