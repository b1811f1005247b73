// Replaying the graph, walking each iteration's critical path back from its
// end, and charging the path's time to ranks, ops, kernels and categories.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "base/phase_timer.h"
#include "base/two_threads.h"
#include "critical_path/critical_path.h"
#include "critical_path/internal.h"
#include "pycompat/numeric.h"
#include "report/gpu_timeline.h"
#include "report/stats.h"

namespace jarvis::critical_path {

namespace detail {

const char* node_kind_name(NodeKind kind) {
  switch (kind) {
    case NodeKind::HostCall:
      return "host_call";
    case NodeKind::SyncReturn:
      return "sync_return";
    case NodeKind::StepStart:
      return "step_start";
    case NodeKind::StepEnd:
      return "step_end";
    case NodeKind::Gpu:
      return "gpu";
    case NodeKind::CollArrive:
      return "collective_arrive";
    case NodeKind::CollJoin:
      return "collective";
    case NodeKind::CollDone:
      return "collective_done";
    case NodeKind::IterEnd:
      return "iteration_end";
  }
  return "?";
}

const char* edge_kind_name(EdgeKind kind) {
  switch (kind) {
    case EdgeKind::HostSeq:
      return "host_seq";
    case EdgeKind::HostHandover:
      return "host_handover";
    case EdgeKind::Launch:
      return "launch";
    case EdgeKind::Stream:
      return "stream";
    case EdgeKind::Sync:
      return "sync";
    case EdgeKind::CrossStream:
      return "cross_stream";
    case EdgeKind::EventWait:
      return "event_wait";
    case EdgeKind::CollArrive:
      return "collective_arrive";
    case EdgeKind::CollDone:
      return "collective_done";
    case EdgeKind::IterEnd:
      return "iteration_end";
  }
  return "?";
}

bool is_host_category(std::string_view category) {
  return category == "host_runtime" || category == "host_gap" || category == "launch_latency" ||
         category == "sync" || category == "host_input";
}

}  // namespace detail

Schedule propagate(const Graph& g, const std::vector<double>& dur, const std::vector<double>& lag) {
  // Each in-edge's source and kind from the graph's compact arrays (made by
  // order_nodes; here for a graph put together without it), and the binding
  // edge's kind kept as it is chosen: no Edge is read.
  std::vector<uint32_t> own_from;
  std::vector<uint8_t> own_kind;
  const bool compact =
      g.in_from.size() == g.in_edges.size() && g.in_kind.size() == g.in_edges.size();
  if (!compact) detail::compact_in_edges(g, own_from, own_kind);
  const uint32_t* in_from = compact ? g.in_from.data() : own_from.data();
  const uint8_t* in_kind = compact ? g.in_kind.data() : own_kind.data();
  Schedule s;
  const size_t n = g.nodes.size();
  s.start.assign(n, 0.0);
  s.binding.assign(n, Schedule::kNone);
  std::vector<char> known(n, 0);
  constexpr uint8_t kKindBits = static_cast<uint8_t>(~Graph::kInFromStart);
  for (uint32_t node : g.order) {
    double best = -std::numeric_limits<double>::infinity();
    uint32_t binding = Schedule::kNone;
    EdgeKind binding_kind = EdgeKind::HostSeq;
    for (uint32_t k = g.in_off[node]; k < g.in_off[node + 1]; ++k) {
      const uint32_t from = in_from[k];
      if (!known[from]) continue;  // an edge of a broken cycle
      const uint8_t bits = in_kind[k];
      const EdgeKind kind = static_cast<EdgeKind>(bits & kKindBits);
      const double anchor =
          (bits & Graph::kInFromStart) ? s.start[from] : s.start[from] + dur[from];
      const uint32_t idx = g.in_edges[k];
      const double at = anchor + lag[idx];
      if (binding == Schedule::kNone ? at > best
                                     : detail::binds_instead(kind, at, binding_kind, best)) {
        best = at;
        binding = idx;
        binding_kind = kind;
      }
    }
    s.binding[node] = binding;
    s.start[node] = binding == Schedule::kNone ? g.nodes[node].start : best;
    known[node] = 1;
  }
  return s;
}

namespace {

// Back from `node` along binding edges until the window start is passed:
// each piece of the path, latest first, as emit(label, kind, from, to) (a
// node's time or an edge's lag, clipped to the window) and, where no edge
// explains a start, untraced(rank, from, to).
template <class Emit, class Untraced>
void walk_back(const Graph& g, const std::vector<double>& dur, const Schedule& s,
               double window_start, uint32_t node, Emit&& emit, Untraced&& untraced) {
  // Walking back, each piece ends where the one after it starts: a binding
  // edge of negative lag (a GPU op that starts before its launch call, the
  // clock offset of a multi-rank trace) would give a piece of negative time
  // and count the time before it twice; cut there, the pieces tile the
  // iteration and none is negative.
  double cap = std::numeric_limits<double>::infinity();
  const auto add = [&](uint32_t label, const char* kind, double from, double to) {
    to = std::min(to, cap);
    from = std::max(from, window_start);
    if (to <= from) return;
    emit(label, kind, from, to);
    cap = from;
  };
  bool at_start = false;  // entered through a launch edge: its duration is not on the path
  for (size_t guard = 0; guard <= g.nodes.size(); ++guard) {
    const double start = s.start[node];
    if (!at_start)
      add(g.nodes[node].label, detail::node_kind_name(g.nodes[node].kind), start,
          start + dur[node]);
    if (start <= window_start) return;
    const uint32_t idx = s.binding[node];
    if (idx == Schedule::kNone) {
      if (std::min(start, cap) > window_start)
        untraced(g.nodes[node].rank, window_start, std::min(start, cap));
      return;
    }
    const Edge& e = g.edges[idx];
    const double anchor = e.from_start ? s.start[e.from] : s.start[e.from] + dur[e.from];
    add(e.label, detail::edge_kind_name(e.kind), anchor, start);
    node = e.from;
    at_start = e.from_start;
  }
}

// An iteration's path as segments, in time order: views of the graph's
// labels, collected latest first in `scratch` and kept in a vector of their
// exact size (a path holds 10,000s of them).
std::vector<Segment> walk_path(const Graph& g, const std::vector<double>& dur, const Schedule& s,
                               double window_start, size_t iteration, uint32_t sink,
                               std::vector<Segment>& scratch) {
  scratch.clear();
  walk_back(
      g, dur, s, window_start, sink,
      [&](uint32_t label, const char* kind, double from, double to) {
        const Label& l = g.labels[label];
        scratch.push_back(
            {&l, kind, from, to - from, l.rank, static_cast<uint32_t>(iteration), label});
      },
      [&](int64_t rank, double from, double to) {
        scratch.push_back({nullptr, "untraced", from, to - from, rank,
                           static_cast<uint32_t>(iteration), Segment::kNoLabel});
      });
  return std::vector<Segment>(scratch.rbegin(), scratch.rend());
}

using Busy = std::vector<Interval>;

// A rank's GPU busy time, merged; `ends_in_order` when the merged intervals'
// ends rise with their starts (always, unless an op ends before it starts).
struct RankBusy {
  Busy merged;
  bool ends_in_order = true;
};

std::map<int64_t, RankBusy> busy_by_rank(const Graph& g, const std::vector<double>& dur,
                                         const Schedule& s) {
  std::map<int64_t, RankBusy> busy;
  for (auto [a, b] : g.gpu_spans)
    busy[g.nodes[a].rank].merged.emplace_back(s.start[a], s.start[b] + dur[b]);
  for (auto& [rank, v] : busy) {
    v.merged = merge_intervals(std::move(v.merged));
    v.ends_in_order =
        std::is_sorted(v.merged.begin(), v.merged.end(),
                       [](const Interval& x, const Interval& y) { return x.second < y.second; });
  }
  return busy;
}

// GPU idle time of each rank in the window, and the part of it during which
// the path is on that rank's host (`host_label`: per label of the graph,
// whether its category is the host's, detail::is_host_category).
void idle_accounting(const Graph& g, const std::map<int64_t, RankBusy>& busy,
                     const std::vector<char>& host_label, IterationResult& it) {
  for (int64_t rank : g.ranks) {
    auto found = busy.find(rank);
    const Busy window{{it.start_us, it.end_us}};
    Busy idle = window;
    if (found != busy.end() && found->second.ends_in_order) {
      // The busy intervals that reach into the window, not the whole
      // trace's for each iteration (what subtract_intervals would skip).
      const Busy& all = found->second.merged;
      const auto from = std::partition_point(
          all.begin(), all.end(), [&](const Interval& b) { return b.second <= it.start_us; });
      const auto to = std::partition_point(from, all.end(),
                                           [&](const Interval& b) { return b.first < it.end_us; });
      idle = subtract_intervals(Busy(from, to), window);
    } else if (found != busy.end()) {
      idle = subtract_intervals(found->second.merged, window);
    }
    it.gpu_idle_us[rank] = intervals_length(idle);
    Busy host;
    for (const Segment& seg : it.path)
      if (seg.rank == rank && seg.dur_us > 0 && seg.label != Segment::kNoLabel &&
          host_label[seg.label])
        host.emplace_back(seg.start_us, seg.start_us + seg.dur_us);
    host = merge_intervals(std::move(host));
    // idle minus (idle minus host) = idle intersected with host.
    it.idle_host_us[rank] = it.gpu_idle_us[rank] - intervals_length(subtract_intervals(host, idle));
  }
}

void summarise(const Graph& g, const Schedule& s, Analysis& a) {
  // The path's time by (rank, op, kernel, category): by label (the graph
  // has one per such key) and by rank for untraced time, each summed in
  // path order as one map entry per key would be, then keyed by name.
  std::vector<double> by_label(g.labels.size(), 0.0);
  std::vector<char> on_path(g.labels.size(), 0);
  std::map<int64_t, double> untraced;
  for (const IterationResult& it : a.iterations)
    for (const Segment& seg : it.path) {
      if (seg.label == Segment::kNoLabel) {
        untraced[seg.rank] += seg.dur_us;
        continue;
      }
      by_label[seg.label] += seg.dur_us;
      on_path[seg.label] = 1;
    }
  using Key = std::tuple<int64_t, std::string_view, std::string_view, std::string_view>;
  std::map<Key, double> time;
  for (size_t l = 0; l < g.labels.size(); ++l)
    if (on_path[l]) {
      const Label& label = g.labels[l];
      time.emplace(Key{label.rank, label.op, label.kernel, label.category}, by_label[l]);
    }
  for (const auto& [rank, t] : untraced)
    time.emplace(Key{rank, std::string_view(), std::string_view(), "untraced"}, t);
  const double n = static_cast<double>(a.iterations.size());
  for (const auto& [key, t] : time) {
    const auto& [rank, op, kernel, category] = key;
    a.contributors.push_back({rank, std::string(op), std::string(kernel), std::string(category),
                              t / n, a.step_time_us > 0 ? t / n / a.step_time_us : 0.0});
  }
  std::stable_sort(
      a.contributors.begin(), a.contributors.end(),
      [](const Contributor& x, const Contributor& y) { return x.time_us > y.time_us; });
  // Waits at the collective joins inside an iteration: every rank that
  // arrived before the last one waited for it.
  std::map<std::pair<int64_t, int64_t>, Wait> waits;
  for (const Join& j : g.joins) {
    const double t = s.start[j.node];
    const bool inside = std::any_of(a.iterations.begin(), a.iterations.end(), [&](const auto& it) {
      return t >= it.start_us && t <= it.end_us;
    });
    const uint32_t bind = s.binding[j.node];
    if (!inside || bind == Schedule::kNone) continue;
    const int64_t last = g.nodes[g.edges[bind].from].rank;
    for (size_t m = 0; m < j.arrivals.size(); ++m) {
      const double w = t - s.start[j.arrivals[m]];
      if (j.ranks[m] == last || w <= 0) continue;
      Wait& wait = waits[{j.ranks[m], last}];
      wait.rank = j.ranks[m];
      wait.waiting_for_rank = last;
      wait.time_us += w / n;
      ++wait.instances;
    }
  }
  for (const auto& [key, w] : waits) a.waits.push_back(w);
  std::stable_sort(a.waits.begin(), a.waits.end(),
                   [](const Wait& x, const Wait& y) { return x.time_us > y.time_us; });
}

// The path's time on each side: GPU ops, the host (calls, gaps, launch
// latency, sync returns), collectives' transfers; the rest (unexplained GPU
// gaps, untraced time) is none of them.
struct Sides {
  double gpu = 0, host = 0, communication = 0;
};

enum class Side : uint8_t { None, Gpu, Host, Communication };

Side side_of(std::string_view category) {
  if (detail::is_host_category(category)) return Side::Host;
  if (category == "communication") return Side::Communication;
  if (category != "gpu_idle" && category != "untraced" && category != "step_end") return Side::Gpu;
  return Side::None;
}

void add_to(Sides& sides, Side side, double us) {
  if (side == Side::Host)
    sides.host += us;
  else if (side == Side::Communication)
    sides.communication += us;
  else if (side == Side::Gpu)
    sides.gpu += us;
}

// `label_sides`: side_of each label's category, per label of the graph.
Sides sides_of(const std::vector<Segment>& path, const std::vector<Side>& label_sides) {
  Sides out;
  for (const Segment& seg : path)
    add_to(out, seg.label == Segment::kNoLabel ? Side::None : label_sides[seg.label], seg.dur_us);
  return out;
}

std::vector<Side> sides_of_labels(const Graph& g) {
  std::vector<Side> out;
  out.reserve(g.labels.size());
  for (const Label& l : g.labels) out.push_back(side_of(l.category));
  return out;
}

// The same sides of an iteration's path without its segments: each piece's
// side from its label's category (`label_sides`, per label of the graph),
// summed in time order as sides_of sums the segments.
Sides walk_sides(const Graph& g, const std::vector<double>& dur, const Schedule& s,
                 double window_start, uint32_t sink, const std::vector<Side>& label_sides) {
  std::vector<std::pair<Side, double>> pieces;  // latest first
  walk_back(
      g, dur, s, window_start, sink,
      [&](uint32_t label, const char*, double from, double to) {
        pieces.emplace_back(label_sides[label], to - from);
      },
      [&](int64_t, double from, double to) { pieces.emplace_back(Side::None, to - from); });
  Sides out;
  for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) add_to(out, it->first, it->second);
  return out;
}

std::string percent(double part, double whole) {
  return fmt::format("{:.0f}%", whole > 0 ? 100 * part / whole : 0.0);
}

// The side holding most of a path's time.
const char* bound_of_sides(const Sides& sides) {
  if (sides.communication > sides.gpu && sides.communication >= sides.host)
    return kBoundByCommunication;
  return sides.host > sides.gpu ? kBoundByHost : kBoundByGpu;
}

void explain_bound(IterationResult& it, const Sides& sides) {
  const double len = it.length_us;
  it.bound_by = bound_of_sides(sides);
  double idle = 0;  // the idlest rank's GPU
  for (const auto& [rank, t] : it.gpu_idle_us) idle = std::max(idle, t);
  std::string ends;
  if (std::isfinite(it.gpu_end_us) && it.gpu_end_us > it.host_end_us + 1e-6)
    ends = fmt::format("; the GPU work launched in it ended {:.1f} us after the host's step end",
                       it.gpu_end_us - it.host_end_us);
  else if (std::isfinite(it.gpu_end_us))
    ends = fmt::format("; the host's step ended {:.1f} us after the GPU work launched in it",
                       it.host_end_us - it.gpu_end_us);
  it.bound_reason =
      fmt::format("path: {} GPU ops, {} host, {} communication; GPU idle {} of the iteration{}",
                  percent(sides.gpu, len), percent(sides.host, len),
                  percent(sides.communication, len), percent(idle, len), ends);
}

// Iterations of about the same length (within kLikeShare of the median) run
// the same work: one verdict for all of them, from their paths together. A
// step whose host and GPU both come close to its length has two nearly
// critical chains, and which of them one iteration's walk follows is noise
// (s_overhead_gpt2_plain: near-identical steps walked 97 % GPU, then 95 %
// host); the paths of all of them weigh both chains (issue 73 point 6).
// Each iteration whose own path leans the other way says so in its reason.
// `sides`: each iteration's path's. `reasons` false: the verdicts alone.
void agree_like_iterations(Analysis& a, double median, const std::vector<Sides>& sides,
                           bool reasons = true) {
  constexpr double kLikeShare = 0.10;
  std::vector<IterationResult*> like;
  std::vector<const Sides*> like_sides;
  for (size_t k = 0; k < a.iterations.size(); ++k)
    if (std::abs(a.iterations[k].length_us - median) <= kLikeShare * median) {
      like.push_back(&a.iterations[k]);
      like_sides.push_back(&sides[k]);
    }
  if (like.size() < 2) return;
  Sides together;
  double length = 0;
  for (size_t k = 0; k < like.size(); ++k) {
    const Sides& s = *like_sides[k];
    together.gpu += s.gpu;
    together.host += s.host;
    together.communication += s.communication;
    length += like[k]->length_us;
  }
  const std::string verdict = bound_of_sides(together);
  for (IterationResult* it : like) {
    if (it->bound_by == verdict) continue;
    if (reasons)
      it->bound_reason += fmt::format(
          "; {}-bound as the {} iterations of this length together (their paths: {} GPU ops, {} "
          "host, {} communication): this iteration's own path leans {}, the two sides being close "
          "in a step like it",
          verdict, like.size(), percent(together.gpu, length), percent(together.host, length),
          percent(together.communication, length), it->bound_by);
    it->bound_by = verdict;
  }
}

std::string summary_line(const Analysis& a) {
  std::map<std::string, size_t> bounds;
  for (const IterationResult& it : a.iterations) ++bounds[it.bound_by];
  std::string bound;
  for (const auto& [side, n] : bounds)
    bound += fmt::format("{}{}-bound in {} of {}", bound.empty() ? "" : ", ", side, n,
                         a.iterations.size());
  std::map<std::string, double> by_category;
  for (const Contributor& c : a.contributors) by_category[c.category] += c.share;
  std::vector<std::pair<double, std::string>> top;
  for (const auto& [cat, share] : by_category) top.push_back({share, cat});
  std::sort(top.begin(), top.end(), std::greater<>());
  std::string path;
  for (size_t k = 0; k < top.size() && k < 3; ++k)
    path += fmt::format("{}{} {:.0f}%", k ? ", " : "", top[k].second, 100 * top[k].first);
  std::string line = fmt::format("step {:.1f} us over {} iteration(s): {}; on the path: {}",
                                 a.step_time_us, a.iterations.size(), bound, path);
  if (!a.profiler_steps.empty())  // decode steps inside generate() calls: the call beside them
    line += fmt::format(
        "; per ProfilerStep (one generate() call, {} of them): {:.1f} us, of which {:.1f} us "
        "before its decode steps (set-up and prefill) and {:.1f} us after them, outside the "
        "iterations",
        a.profiler_steps.size(), a.profiler_step_us, a.profiler_step_before_us,
        a.profiler_step_after_us);
  return line;
}

// An iteration's (or a ProfilerStep's) start and end under the schedule: its
// first start node to its sink. The host may start a step while the GPU still
// runs the last one: it starts where the previous one ended (previous_end,
// updated), so that the steps tile the loop and a GPU-bound step is its GPU
// period.
std::pair<double, double> tiled_window(const Iteration& iter, const Schedule& s,
                                       double& previous_end) {
  double start = std::numeric_limits<double>::infinity();
  for (uint32_t n : iter.start_nodes) start = std::min(start, s.start[n]);
  const double end = s.start[iter.sink];
  start = std::min(std::max(start, previous_end), end);
  previous_end = end;
  return {start, end};
}

// The ProfilerSteps that hold the iterations (decode steps of one
// generate() call each) under the schedule, after the iterations' times: the
// same rule (a step starts where the one before it ended), and their parts
// before the first iteration inside them and after the last.
void profiler_step_times(const Graph& g, const Schedule& s, Analysis& a) {
  if (g.profiler_steps.empty()) return;
  double previous_end = -std::numeric_limits<double>::infinity();
  double length = 0, before = 0, after = 0;
  for (const Iteration& step : g.profiler_steps) {
    ProfilerStepResult r;
    r.name = step.name;
    std::tie(r.start_us, r.end_us) = tiled_window(step, s, previous_end);
    r.length_us = r.end_us - r.start_us;
    double first = r.end_us, last = r.start_us;
    for (const IterationResult& it : a.iterations)
      if (it.start_us >= r.start_us && it.start_us < r.end_us) {
        ++r.iterations;
        first = std::min(first, it.start_us);
        last = std::max(last, it.end_us);
      }
    if (r.iterations > 0) {
      r.before_us = first - r.start_us;
      r.after_us = std::max(0.0, r.end_us - last);
    }
    length += r.length_us;
    before += r.before_us;
    after += r.after_us;
    a.profiler_steps.push_back(std::move(r));
  }
  const auto n = static_cast<double>(a.profiler_steps.size());
  a.profiler_step_us = length / n;
  a.profiler_step_before_us = before / n;
  a.profiler_step_after_us = after / n;
}

// The analysis's iterations with their times alone (no path) under the
// schedule, and the mean step; returns the median iteration length.
double iteration_times(const Graph& g, const std::vector<double>& dur, const Schedule& s,
                       Analysis& a) {
  a.ranks = g.ranks;
  a.clock_offset_us = g.clock_offset_us;
  a.iterations_source = g.iterations_source;
  a.notes = g.notes;
  for (const auto& [rank, us] : g.backlog_us) a.gpu_backlog_left_out_us += us;
  std::vector<double> lengths;
  lengths.reserve(g.iterations.size());
  a.iterations.reserve(g.iterations.size());
  double previous_end = -std::numeric_limits<double>::infinity();
  for (const Iteration& iter : g.iterations) {
    IterationResult it;
    it.name = iter.name;
    std::tie(it.start_us, it.end_us) = tiled_window(iter, s, previous_end);
    it.length_us = it.end_us - it.start_us;
    it.host_end_us = it.gpu_end_us = -std::numeric_limits<double>::infinity();
    for (uint32_t n : iter.host_ends) it.host_end_us = std::max(it.host_end_us, s.start[n]);
    for (uint32_t n : iter.gpu_ends) it.gpu_end_us = std::max(it.gpu_end_us, s.start[n] + dur[n]);
    lengths.push_back(it.length_us);
    a.iterations.push_back(std::move(it));
  }
  a.step_time_us = pycompat::numpy_mean(lengths);
  profiler_step_times(g, s, a);
  const double median = stats::median(lengths);
  for (IterationResult& it : a.iterations)
    it.differs = std::abs(it.length_us - median) > 0.05 * median;
  return median;
}

}  // namespace

Analysis analyse(const Graph& g, const std::vector<double>& dur, const std::vector<double>& lag) {
  std::optional<PhaseTimer> t(std::in_place, "critical_path/analyse/propagate");
  const Schedule s = propagate(g, dur, lag);
  t.emplace("critical_path/analyse/busy");
  const auto busy = busy_by_rank(g, dur, s);
  Analysis a;
  const double median = iteration_times(g, dur, s, a);
  t.emplace("critical_path/analyse/paths");
  const std::vector<Side> label_sides = sides_of_labels(g);
  std::vector<char> host_label(label_sides.size());
  for (size_t l = 0; l < label_sides.size(); ++l) host_label[l] = label_sides[l] == Side::Host;
  // Each iteration's path, idle and bound read the graph and the schedule
  // and write that iteration only: two threads take them in turn.
  std::vector<Sides> sides(a.iterations.size());
  std::vector<std::function<void()>> walks;
  for (size_t k = 0; k < a.iterations.size(); ++k)
    walks.push_back([&, k] {
      std::vector<Segment> scratch;
      IterationResult& it = a.iterations[k];
      it.path = walk_path(g, dur, s, it.start_us, k, g.iterations[k].sink, scratch);
      for (const Segment& seg : it.path) it.path_length_us += seg.dur_us;
      idle_accounting(g, busy, host_label, it);
      sides[k] = sides_of(it.path, label_sides);
      explain_bound(it, sides[k]);
    });
  run_on_two_threads(walks);
  agree_like_iterations(a, median, sides);
  t.emplace("critical_path/analyse/summarise");
  summarise(g, s, a);
  a.summary = summary_line(a);
  return a;
}

Analysis analyse_steps(const Graph& g, const std::vector<double>& dur,
                       const std::vector<double>& lag, StepDetail detail,
                       const BoundsWhen& bounds_when) {
  Analysis a;
  const Schedule s = propagate(g, dur, lag);
  const double median = iteration_times(g, dur, s, a);
  if (detail == StepDetail::Times && !(bounds_when && bounds_when(a))) return a;
  const std::vector<Side> label_sides = sides_of_labels(g);
  std::vector<Sides> sides;
  sides.reserve(a.iterations.size());
  for (size_t k = 0; k < a.iterations.size(); ++k) {
    IterationResult& it = a.iterations[k];
    sides.push_back(walk_sides(g, dur, s, it.start_us, g.iterations[k].sink, label_sides));
    it.bound_by = bound_of_sides(sides.back());
  }
  agree_like_iterations(a, median, sides, /*reasons=*/false);
  return a;
}

Analysis analyse(const Graph& g) {
  std::vector<double> dur, lag;
  for (const Node& n : g.nodes) dur.push_back(n.dur);
  for (const Edge& e : g.edges) lag.push_back(e.lag);
  Analysis a = analyse(g, dur, lag);
  a.recorded_step_time_us = a.step_time_us;
  a.recorded_profiler_step_us = a.profiler_step_us;
  return a;
}

}  // namespace jarvis::critical_path
