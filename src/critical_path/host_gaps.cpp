// Host time no event records: the stretches of a step where no host thread
// records anything, and the what-if that takes them out (host_gaps.h).
#include "critical_path/host_gaps.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "base/sort_runs.h"

namespace jarvis::critical_path {
namespace {

// Events that record host work: cpu ops, runtime calls, and a DataLoader's
// __next__ (the loader's time, sized by its own finding).
bool host_gap_covers(const Trace& t, Uid u) {
  const Event& e = t.events[u];
  if (!e.has_ts() || !e.has_dur()) return false;
  if (e.cat == Cat::CpuOp || is_runtime_cat(e.cat)) return true;
  if (e.cat != Cat::UserAnnotation) return false;
  const std::string_view name = t.name(u);
  return name.find("DataLoader") != std::string_view::npos &&
         name.find("__next__") != std::string_view::npos;
}

// The outermost cpu_op above `u` (u itself when none).
Uid host_gap_outermost_op(const Trace& t, const CallTree& tree, Uid u) {
  Uid top = u;
  for (Uid p = tree.parent(u); p != kNoUid; p = tree.parent(p))
    if (t.events[p].cat == Cat::CpuOp) top = p;
  return top;
}

// The innermost user annotation above `u` that began by `by` and is not a
// step's own marker.
std::string host_gap_annotation(const Trace& t, const CallTree& tree, Uid u, double by) {
  for (Uid p = tree.parent(u); p != kNoUid; p = tree.parent(p)) {
    const Event& e = t.events[p];
    if (e.cat != Cat::UserAnnotation || !e.has_ts() || e.ts() > by) continue;
    const std::string_view name = t.name(p);
    if (name.starts_with("ProfilerStep#")) continue;
    return std::string(name);
  }
  return "";
}

// The rank's host part of an iteration in trace time: its step start to its
// step end (the StepStart / StepEnd nodes of that rank).
std::optional<std::pair<double, double>> host_gap_window(const Graph& g, const Iteration& it,
                                                         int64_t rank) {
  const double off = g.clock_offset_us.count(rank) ? g.clock_offset_us.at(rank) : 0.0;
  std::optional<double> from, to;
  for (uint32_t n : it.start_nodes)
    if (g.nodes[n].rank == rank) from = g.nodes[n].start - off;
  for (uint32_t n : it.host_ends)
    if (g.nodes[n].rank == rank) to = std::max(to.value_or(-1e300), g.nodes[n].start - off);
  if (!from || !to || !(*to > *from)) return std::nullopt;
  return std::make_pair(*from, *to);
}

size_t host_gap_count_in(const std::vector<double>& sorted, double from, double to) {
  return static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), to) -
                             std::lower_bound(sorted.begin(), sorted.end(), from));
}

void host_gaps_of_rank(const Trace& t, const CallTree& tree, const Graph& g, int64_t rank,
                       const HostGapEvents& recorded, const HostGapSelector& sel,
                       std::vector<HostGap>& out) {
  const std::vector<Uid>& events = recorded.events;
  const std::vector<double>& frame_marks = recorded.frame_marks;
  const std::vector<double>& memory = recorded.memory;
  const auto ts_of = [&](Uid u) { return t.events[u].ts(); };
  const auto end_of = [&](Uid u) { return t.events[u].end(); };
  const ProfilerCost cost = g.profiler_cost.count(rank) ? g.profiler_cost.at(rank) : ProfilerCost{};
  // Each iteration's window and the first event at or after its start.
  struct Window {
    size_t iteration = 0;
    double from = 0, to = 0;
    size_t first = 0;
    // The latest end among the events before `first`, and the first event
    // that reaches it: what the window starts from.
    double latest_end = -1e300;
    Uid latest = kNoUid;
  };
  std::vector<Window> windows;
  for (size_t k = 0; k < g.iterations.size(); ++k) {
    const auto window = host_gap_window(g, g.iterations[k], rank);
    if (!window) continue;
    Window w;
    w.iteration = k;
    w.from = window->first;
    w.to = window->second;
    // The first event not before (from, -inf, 0) in (ts, end, uid) order.
    w.first = static_cast<size_t>(std::partition_point(events.begin(), events.end(),
                                                       [&](Uid u) { return ts_of(u) < w.from; }) -
                                  events.begin());
    windows.push_back(w);
  }
  // The latest end before each window's first event, in one pass over the
  // events in order (the windows visited by their first event).
  std::vector<size_t> by_first(windows.size());
  for (size_t k = 0; k < by_first.size(); ++k) by_first[k] = k;
  std::stable_sort(by_first.begin(), by_first.end(),
                   [&](size_t a, size_t b) { return windows[a].first < windows[b].first; });
  {
    double latest_end = -1e300;
    Uid latest = kNoUid;
    size_t pos = 0;
    for (size_t k : by_first) {
      for (; pos < windows[k].first; ++pos)
        if (end_of(events[pos]) > latest_end) {
          latest_end = end_of(events[pos]);
          latest = events[pos];
        }
      windows[k].latest_end = latest_end;
      windows[k].latest = latest;
    }
  }
  for (const Window& w : windows) {
    const double from = w.from, to = w.to;
    // Events that began before the window and reach into it count too: the
    // one that reaches latest (the first of those that reach as far).
    double cur_end = -1e300;
    Uid cur = kNoUid;
    if (w.latest_end > from) {
      cur_end = w.latest_end;
      cur = w.latest;
    }
    for (size_t pos = w.first; pos < events.size() && ts_of(events[pos]) < to; ++pos) {
      const Uid uid = events[pos];
      const double ts = ts_of(uid), end = end_of(uid);
      if (cur != kNoUid && ts - cur_end >= sel.min_us && cur_end >= from) {
        HostGap gap;
        gap.rank = rank;
        gap.thread = t.events[uid].thread;
        gap.from_us = cur_end;
        gap.to_us = ts;
        gap.iteration = w.iteration;
        gap.offset_us = cur_end - from;
        gap.after = cur;
        gap.before = uid;
        gap.after_name = std::string(t.name(host_gap_outermost_op(t, tree, cur)));
        gap.before_name = std::string(t.name(host_gap_outermost_op(t, tree, uid)));
        gap.annotation = host_gap_annotation(t, tree, uid, cur_end);
        gap.profiler_us =
            0.5 * static_cast<double>(host_gap_count_in(frame_marks, cur_end, ts)) *
                cost.per_python_frame_us +
            static_cast<double>(host_gap_count_in(memory, cur_end, ts)) * cost.per_memory_event_us;
        gap.profiler_us = std::min(gap.profiler_us, gap.dur());
        if (host_gap_selected(t, sel, gap)) out.push_back(std::move(gap));
      }
      if (end > cur_end) {
        cur_end = end;
        cur = uid;
      }
    }
  }
}

}  // namespace

namespace {

// `events` in `before`'s order (a total order: the UID breaks ties), sorted
// per thread and kind (runtime calls, the rest), then those sequences merged
// pairwise (merge_sorted_runs, comparing only where two overlap): a trace
// lists each thread's ops in time order and its runtime calls in time order,
// each in a run of its own (a tiled trace: per thread, kind and copy, the
// copies one after the other in time), so each sequence is sorted or nearly
// (one sort of the whole list merged 769 runs of a 1 GB trace in ten passes,
// reading two events per comparison; per thread alone, a thread's ops and
// calls still made 2 x 257 runs, nine passes).
template <class Before>
void sort_by_group_then_merge(const Trace& t, std::vector<Uid>& events, const Before& before) {
  std::vector<size_t> count(2 * (t.threads.size() + 1), 0);
  const auto group_of = [&](Uid u) {
    const Event& e = t.events[u];
    // Two groups a thread, its runtime calls in the second; past the table: one more thread.
    return 2 * std::min<size_t>(e.thread, t.threads.size()) + (e.is_runtime() ? 1 : 0);
  };
  for (Uid u : events) ++count[group_of(u)];
  // Each group's events, in list order, in one array (by group).
  std::vector<size_t> from(count.size() + 1, 0);
  for (size_t k = 0; k < count.size(); ++k) from[k + 1] = from[k] + count[k];
  std::vector<size_t> bounds;  // of the groups with events: one sorted run each
  for (size_t k = 0; k < count.size(); ++k)
    if (count[k] > 0) bounds.push_back(from[k]);
  if (bounds.size() <= 1) {
    stable_sort_runs(events, before);
    return;
  }
  bounds.push_back(events.size());
  std::vector<Uid> grouped(events.size());
  {
    std::vector<size_t> at(from.begin(), from.end() - 1);
    for (Uid u : events) grouped[at[group_of(u)]++] = u;
  }
  for (size_t r = 0; r + 1 < bounds.size(); ++r)
    stable_sort_runs(grouped.begin() + static_cast<std::ptrdiff_t>(bounds[r]),
                     grouped.begin() + static_cast<std::ptrdiff_t>(bounds[r + 1]), before);
  // The merged sequence ends in `events` or in `grouped`, taken then.
  if (!merge_sorted_runs(grouped.begin(), events.begin(), std::move(bounds), before))
    events.swap(grouped);
}

}  // namespace

HostGapEvents host_gap_events(const Trace& t) {
  // The events that record host work, by (ts, end, uid): their UIDs alone
  // (a trace's host events are nearly in time order already, which
  // stable_sort_runs merges in a pass or two), not a copy of their times
  // (the copies and a prefix array beside them were 11 MB of fresh pages on
  // a 300k-event trace, most of the scan's time).
  HostGapEvents out;
  std::vector<Uid>& events = out.events;
  events.reserve(t.events.size());
  for (Uid u = 0; u < t.events.size(); ++u) {
    const Event& e = t.events[u];
    if (host_gap_covers(t, u)) {
      events.push_back(u);
    } else if (e.cat == Cat::PythonFunction && e.has_ts() && e.has_dur()) {
      out.frame_marks.push_back(e.ts());
      out.frame_marks.push_back(e.end());
    } else if (e.cat == Cat::CpuInstantEvent && e.has_ts() && t.name(u) == "[memory]") {
      out.memory.push_back(e.ts());
    }
  }
  const auto ts_of = [&](Uid u) { return t.events[u].ts(); };
  const auto end_of = [&](Uid u) { return t.events[u].end(); };
  const auto before = [&](Uid a, Uid b) {
    // Two starts within 2^52 ns order as their microseconds do (ns_to_us
    // rounds each quotient correctly, and there the doubles are closer than
    // the 0.001 us apart two integers' quotients are): compared as integers,
    // without the two divisions, except when equal.
    const int64_t na = t.events[a].ts_ns, nb = t.events[b].ts_ns;
    constexpr int64_t kDistinct = int64_t{1} << 52;
    if (na != nb && na > -kDistinct && na < kDistinct && nb > -kDistinct && nb < kDistinct)
      return na < nb;
    const double ta = ts_of(a), tb = ts_of(b);
    if (ta != tb) return ta < tb;
    const double ea = end_of(a), eb = end_of(b);
    if (ea != eb) return ea < eb;
    return a < b;
  };
  sort_by_group_then_merge(t, events, before);
  events.shrink_to_fit();
  std::sort(out.frame_marks.begin(), out.frame_marks.end());
  std::sort(out.memory.begin(), out.memory.end());
  return out;
}

bool host_gap_selected(const Trace& trace, const HostGapSelector& sel, const HostGap& gap) {
  const auto named = [&](const std::string& want, const std::string& outer, Uid event) {
    return want.empty() || want == outer || want == trace.name(event);
  };
  return (!sel.rank || *sel.rank == gap.rank) && gap.dur() >= sel.min_us &&
         named(sel.after, gap.after_name, gap.after) &&
         named(sel.before, gap.before_name, gap.before);
}

void add_host_gaps(const std::vector<HostGap>& gaps, Scenario& scenario) {
  for (const HostGap& gap : gaps) {
    const double keep = gap.profiler_us;  // the profiler's, not the program's
    if (gap.dur() - keep > 0)
      scenario.remove_unrecorded.push_back({gap.rank, gap.thread, gap.from_us, gap.to_us - keep});
  }
}

std::vector<HostGap> unrecorded_host_gaps(const std::vector<RankInput>& inputs, const Graph& graph,
                                          const HostGapSelector& sel) {
  return unrecorded_host_gaps(inputs, graph, sel, {});
}

std::vector<HostGap> unrecorded_host_gaps(const std::vector<RankInput>& inputs, const Graph& graph,
                                          const HostGapSelector& sel,
                                          const std::vector<const HostGapEvents*>& recorded) {
  if (!recorded.empty() && recorded.size() != inputs.size())
    throw CriticalPathError("the recorded host events are not of these traces");
  if (inputs.size() != graph.input_ranks.size())
    throw CriticalPathError("the graph was not built from these traces");
  if (sel.rank && !std::count(graph.input_ranks.begin(), graph.input_ranks.end(), *sel.rank))
    throw CriticalPathError(fmt::format("rank {} is not among the traces' ranks ({})", *sel.rank,
                                        fmt::join(graph.input_ranks, ", ")));
  std::vector<HostGap> out;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const int64_t rank = graph.input_ranks[k];
    if (sel.rank && *sel.rank != rank) continue;
    if (!recorded.empty()) {
      host_gaps_of_rank(*inputs[k].trace, *inputs[k].tree, graph, rank, *recorded[k], sel, out);
      continue;
    }
    const HostGapEvents own = host_gap_events(*inputs[k].trace);
    host_gaps_of_rank(*inputs[k].trace, *inputs[k].tree, graph, rank, own, sel, out);
  }
  return out;
}

std::vector<HostGap> add_host_gap_removal(const std::vector<RankInput>& inputs, const Graph& graph,
                                          const HostGapSelector& sel, Scenario& scenario) {
  std::vector<HostGap> gaps = unrecorded_host_gaps(inputs, graph, sel);
  if (gaps.empty()) {
    // Say what the trace has: the longest stretches of any name.
    HostGapSelector any = sel;
    any.after.clear();
    any.before.clear();
    std::vector<HostGap> all = unrecorded_host_gaps(inputs, graph, any);
    std::sort(all.begin(), all.end(),
              [](const HostGap& a, const HostGap& b) { return a.dur() > b.dur(); });
    std::vector<std::string> names;
    for (size_t k = 0; k < all.size() && k < 3; ++k)
      names.push_back(fmt::format("after '{}' before '{}' ({:.0f} us)", all[k].after_name,
                                  all[k].before_name, all[k].dur()));
    throw CriticalPathError(fmt::format(
        "no host time of at least {:.0f} us without a recorded event{}{} inside the iterations{}",
        sel.min_us, sel.after.empty() ? "" : fmt::format(" after '{}'", sel.after),
        sel.before.empty() ? "" : fmt::format(" before '{}'", sel.before),
        names.empty() ? std::string(" (the trace has none)")
                      : fmt::format("; the longest: {}", fmt::join(names, "; "))));
  }
  add_host_gaps(gaps, scenario);
  return gaps;
}

std::vector<HostGap> add_host_gap_removal(const Loaded& loaded, const HostGapSelector& sel,
                                          Scenario& scenario) {
  std::vector<RankInput> inputs;
  for (size_t k = 0; k < loaded.traces.size(); ++k)
    inputs.push_back({loaded.traces[k].get(), loaded.trees[k].get(), -1});
  return add_host_gap_removal(inputs, loaded.graph, sel, scenario);
}

}  // namespace jarvis::critical_path
