// The profiler's own cost on the host, estimated from the trace alone, and
// the un-profiled schedule built from it (docs/critical-path.md, "Profiler
// overhead").
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <tuple>

#include <fmt/format.h>

#include "base/phase_timer.h"
#include "base/two_threads.h"
#include "critical_path/calibration.h"
#include "critical_path/critical_path.h"
#include "critical_path/internal.h"
#include "report/stats.h"
#include "trace/memory_events.h"
#include "xplane/space.h"

namespace jarvis::critical_path {
namespace {

// Each event's cost in units of the trace's own op gap (ProfilerCost): the
// built-in ProfilerCostModel (critical_path/calibration.h; `jarvis calibrate`
// fits them to a host), fitted
// on ../shared/ab_pairs/s_overhead_{gpt2,decode}_{plain,shapes,shapes_stack,
// shapes_memory} against the same step timed without the profiler (the
// derivation and the fit's residuals are in docs/critical-path.md):
// - an op: its enter and exit records (with record_shapes, the inputs' shapes
//   and dtypes), of which the gap between two back-to-back ops is a part;
//   ProfilerCostModel::op_gaps = 3.1;
// With record_shapes the cost follows the inputs recorded: per op 0.21 gaps
// and per input (an "Input Dims" entry) 0.98 (fitted on s_overhead_gpt2 and
// a ResNet-50 step, whose ops carry 4.2 inputs where GPT-2's carry 3.2).
//   shapes_op_gaps = 0.21, shapes_input_gaps = 0.98;
// - a runtime call: CUPTI's callback around it and its activity record;
//   runtime_call_gaps = 1.0;
// - a Python frame (with_stack): the tracer's enter and exit; XProf's Python
//   tracer (JAX's python_tracer_level) costs half as much per frame
//   (../shared/ab_pairs/s_jax_A_op_by_op: 62.7k frames a step, 117.6 ms
//   recorded against 50.6 ms timed in the recording process after it, which
//   is 1.07 us a frame at an op gap of 2.1 us);
//   python_frame_gaps = 1.0, xla_python_frame_gaps = 0.5;
// - a [memory] event (profile_memory): the allocator callback's record.
//   memory_event_gaps = 1.4.
// Fewer measured gaps than this: the gap of the calibration traces instead.
constexpr size_t kMinGaps = 20;
constexpr double kDefaultGapShapesUs = 2.2, kDefaultGapPlainUs = 1.2;
// What the un-profiled host keeps of a recorded gap or call at least: the
// Python and the dispatcher still run.
constexpr double kKeptShare = 0.1;

// What each recorded input adds to an op's cost (record_shapes only).
double per_input_us(const ProfilerCost& cost) {
  return cost.per_input_us;
}

// Median gap between consecutive cpu_op children of a cpu_op.
void measure_op_gap(const Trace& trace, const CallTree& tree, ProfilerCost& cost) {
  std::vector<double> gaps;
  for (Uid u = 0; u < trace.events.size() && u < tree.size(); ++u) {
    if (trace.events[u].cat != Cat::CpuOp) continue;
    Uid previous = kNoUid;
    for (Uid c : tree.children(u)) {
      const Event& e = trace.events[c];
      if (e.cat != Cat::CpuOp || !e.has_ts() || !e.has_dur()) continue;
      if (previous != kNoUid) {
        const double gap = e.ts() - trace.events[previous].end();
        if (gap >= 0 && std::isfinite(gap)) gaps.push_back(gap);
      }
      previous = c;
    }
  }
  cost.gaps_measured = gaps.size();
  cost.op_gap_us = gaps.size() >= kMinGaps ? stats::median(gaps)
                   : cost.record_shapes    ? kDefaultGapShapesUs
                                           : kDefaultGapPlainUs;
}

}  // namespace

ProfilerCost measure_profiler_cost(const Trace& trace, const CallTree& tree) {
  return measure_profiler_cost(trace, tree, profiler_cost_model_for(trace));
}

ProfilerCost measure_profiler_cost(const Trace& trace, const CallTree& tree,
                                   const ProfilerCostModel& model) {
  PhaseTimer timer("critical_path/profiler_cost/measure");
  ProfilerCost cost;
  cost.calibration = model.source;
  size_t inputs = 0;
  uint32_t memory_name = 0;
  const bool any_memory = trace.strings.find("[memory]", memory_name);
  // The key's string id looked up once, not per op (Trace::arg looks it up
  // on each call: 2 M ops at x256).
  uint32_t dims_key = 0;
  const bool any_dims = trace.strings.find("Input Dims", dims_key);
  auto input_dims = [&](const Event& e) -> const PyValue* {
    if (!any_dims || e.args < 0) return nullptr;
    for (const auto& [k, v] : trace.arg_lists[static_cast<size_t>(e.args)])
      if (k == dims_key) return &v;
    return nullptr;
  };
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (e.cat == Cat::CpuOp) {
      ++cost.ops;
      // The inputs an op recorded with record_shapes ("Input Dims" entries).
      if (const PyValue* dims = input_dims(e)) {
        cost.record_shapes = true;
        inputs += dims->is_seq() ? dims->size() : 0;
      }
    } else if (e.is_runtime()) {
      ++cost.runtime_calls;
    } else if (e.cat == Cat::PythonFunction) {
      ++cost.python_frames;
    } else if (any_memory && e.cat == Cat::CpuInstantEvent && e.name == memory_name) {
      ++cost.memory_events;
    }
  }
  cost.with_stack = cost.python_frames > 0;
  cost.profile_memory = cost.memory_events > 0;
  measure_op_gap(trace, tree, cost);
  // A profiler that records whole microseconds (PyTorch without Kineto)
  // shows no gap: a calibration of the host gives one (its costs are then in
  // microseconds).
  if (model.fallback_op_gap_us > 0 && (cost.gaps_measured < kMinGaps || !(cost.op_gap_us > 0)))
    cost.op_gap_us = model.fallback_op_gap_us;
  cost.per_op_us = (cost.record_shapes ? model.shapes_op_gaps : model.op_gaps) * cost.op_gap_us;
  cost.per_input_us = cost.record_shapes ? model.shapes_input_gaps * cost.op_gap_us : 0.0;
  cost.inputs = inputs;
  cost.per_runtime_call_us = model.runtime_call_gaps * cost.op_gap_us;
  cost.per_python_frame_us =
      (xplane::is_xplane_trace(trace) ? model.xla_python_frame_gaps : model.python_frame_gaps) *
      cost.op_gap_us;
  cost.per_memory_event_us = model.memory_event_gaps * cost.op_gap_us;
  cost.total_us = cost.per_op_us * static_cast<double>(cost.ops) +
                  per_input_us(cost) * static_cast<double>(inputs) +
                  cost.per_runtime_call_us * static_cast<double>(cost.runtime_calls) +
                  cost.per_python_frame_us * static_cast<double>(cost.python_frames) +
                  cost.per_memory_event_us * static_cast<double>(cost.memory_events);
  return cost;
}

namespace {

// Interference: a host thread that runs the same calls in every iteration
// but whose gaps all stretch in some iterations (ab_pairs s_layout_B: the
// autograd thread's ops took 2x longer in steps 2 and 3 than in step 1, the
// step timed without the profiler matches step 1) was slowed by something
// outside the program: another process, the profiler draining its buffers.
// A slowdown that uniform moves the median gap, which a few waits do not;
// and it is told from the profiler's own cost, which varies between
// iterations too, by another thread of the process that ran the same
// iteration at its usual pace. The un-profiled host is the undisturbed
// iteration's, so the stretched iterations' gaps and calls on that thread are
// scaled back to it.
constexpr double kInterferenceRatio = 1.25;  // median gap over the fastest iteration's
constexpr double kSteadyRatio = 1.1;         // another thread's, at its usual pace
constexpr size_t kMinGapsPerIteration = 20;
constexpr double kSameCalls = 1.02;  // gaps per iteration, most over fewest

struct Interference {
  int64_t rank = -1;
  uint32_t thread = UINT32_MAX;
  size_t iteration = 0;
  double factor = 1;  // applied to the iteration's host gaps and calls on the thread
};

// Which iteration a time falls in (a binary search over their starts).
class IterationIndex {
 public:
  explicit IterationIndex(const Graph& g) : g_(g), by_start_(g.iterations.size()) {
    for (size_t i = 0; i < by_start_.size(); ++i) by_start_[i] = i;
    std::sort(by_start_.begin(), by_start_.end(),
              [&](size_t a, size_t b) { return g_.iterations[a].start < g_.iterations[b].start; });
  }
  std::optional<size_t> operator()(double t) const {
    auto after = std::upper_bound(by_start_.begin(), by_start_.end(), t,
                                  [&](double x, size_t i) { return x < g_.iterations[i].start; });
    if (after == by_start_.begin()) return std::nullopt;
    const size_t i = *std::prev(after);
    if (t < g_.iterations[i].end) return i;
    return std::nullopt;
  }

 private:
  const Graph& g_;
  std::vector<size_t> by_start_;
};

std::vector<Interference> host_interference(const Graph& g, const std::vector<double>& lag) {
  std::vector<Interference> found;
  const size_t iterations = g.iterations.size();
  if (iterations < 2) return found;
  const IterationIndex iteration_of(g);
  std::map<std::pair<int64_t, uint32_t>, std::vector<std::vector<double>>> gaps;
  for (size_t k = 0; k < g.edges.size(); ++k) {
    const Edge& e = g.edges[k];
    if (e.kind != EdgeKind::HostSeq || e.thread == UINT32_MAX) continue;
    const Node& from = g.nodes[e.from];
    const auto i = iteration_of(from.start);
    if (!i) continue;
    auto& per = gaps[{from.rank, e.thread}];
    per.resize(iterations);
    per[*i].push_back(lag[k]);
  }
  // Per thread with the same calls in every iteration: each iteration's
  // median gap over the fastest iteration's.
  std::map<std::pair<int64_t, uint32_t>, std::vector<double>> ratios;
  for (auto& [key, per] : gaps) {
    const auto [fewest, most] = std::minmax_element(
        per.begin(), per.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
    // The same calls in every iteration (a call or two may fall on the other
    // side of a step boundary); otherwise there is nothing to compare.
    if (fewest->size() < kMinGapsPerIteration ||
        static_cast<double>(most->size()) > kSameCalls * static_cast<double>(fewest->size()))
      continue;
    std::vector<double> median(iterations);
    for (size_t i = 0; i < iterations; ++i) {
      auto& v = per[i];
      const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
      std::nth_element(v.begin(), mid, v.end());
      median[i] = *mid;
    }
    const double fastest = *std::min_element(median.begin(), median.end());
    if (!(fastest > 0)) continue;
    for (double& m : median) m /= fastest;
    ratios[key] = std::move(median);
  }
  // A thread stretched while another thread of its process ran that same
  // iteration at its usual pace: the program did not change between the
  // iterations, something slowed that thread. (A whole process slower in one
  // iteration is not told apart from the profiler's own varying cost.)
  for (const auto& entry : ratios) {  // no structured binding: clang 14 cannot capture one
    const auto& key = entry.first;
    const auto& r = entry.second;
    for (size_t i = 0; i < iterations; ++i) {
      if (!(r[i] > kInterferenceRatio)) continue;
      const bool other_steady = std::any_of(ratios.begin(), ratios.end(), [&](const auto& o) {
        return o.first.first == key.first && o.first.second != key.second &&
               o.second[i] <= kSteadyRatio;
      });
      if (other_steady) found.push_back({key.first, key.second, i, 1 / r[i]});
    }
  }
  return found;
}

void scale_interfered(const Graph& g, const std::vector<Interference>& found,
                      std::vector<double>& dur, std::vector<double>& lag) {
  if (found.empty()) return;
  std::map<std::tuple<int64_t, uint32_t, size_t>, double> factor;
  for (const Interference& f : found) factor[{f.rank, f.thread, f.iteration}] = f.factor;
  const IterationIndex iteration_of(g);
  auto factor_of = [&](const Node& n, uint32_t thread) {
    const auto i = iteration_of(n.start);
    if (!i) return 1.0;
    auto it = factor.find({n.rank, thread, *i});
    return it == factor.end() ? 1.0 : it->second;
  };
  for (size_t k = 0; k < g.edges.size(); ++k)
    if (g.edges[k].kind == EdgeKind::HostSeq)
      lag[k] *= factor_of(g.nodes[g.edges[k].from], g.edges[k].thread);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (g.nodes[n].kind == NodeKind::HostCall) dur[n] *= factor_of(g.nodes[n], g.nodes[n].thread);
}

// The recorded times less the profiler's estimated cost.
void profiler_free_times(const Graph& g, std::vector<double>& dur, std::vector<double>& lag) {
  dur.clear();
  lag.clear();
  for (const Node& n : g.nodes) dur.push_back(std::max(kKeptShare * n.dur, n.dur - n.profiler_us));
  // GPU work queued before profiling is not the step's: once the lags are
  // calibrated on the measured trace, the first iteration's own work starts
  // where its launches (and its stream's other work) let it, as in every
  // later step.
  for (uint32_t n : g.backlog_nodes) dur[n] = 0;
  for (const Edge& e : g.edges)
    lag.push_back(e.profiler_us > 0 && e.lag > 0
                      ? std::max(kKeptShare * e.lag, e.lag - e.profiler_us)
                      : e.lag);
}

}  // namespace

void unprofiled_times(const Graph& g, std::vector<double>& dur, std::vector<double>& lag) {
  profiler_free_times(g, dur, lag);
  scale_interfered(g, host_interference(g, lag), dur, lag);
}

Analysis analyse_unprofiled(const Graph& g) {
  WhatIfBase base;
  return analyse_unprofiled(g, base);
}

Analysis analyse_unprofiled(const Graph& g, WhatIfBase& base) {
  return analyse_unprofiled(g, base, analyse(g));
}

namespace {

// unprofiled_times, with both of its steps kept: the profiler's cost alone
// (what the summary reports as its host time) and the interference found on
// those times (named in the summary). The base's times are the schedule's.
struct UnprofiledTimes {
  std::vector<double> plain_dur, plain_lag;
  std::vector<Interference> found;
};

UnprofiledTimes unprofiled_times_into(const Graph& g, WhatIfBase& base) {
  PhaseTimer t("critical_path/unprofiled/times");
  UnprofiledTimes out;
  profiler_free_times(g, out.plain_dur, out.plain_lag);
  out.found = host_interference(g, out.plain_lag);
  base.dur = out.plain_dur;
  base.lag = out.plain_lag;
  scale_interfered(g, out.found, base.dur, base.lag);
  return out;
}

Analysis unprofiled_analysis(const Graph& g, WhatIfBase& base, const Analysis& recorded,
                             const UnprofiledTimes& times, Analysis a);

}  // namespace

Analysis analyse_unprofiled(const Graph& g, WhatIfBase& base, const Analysis& recorded) {
  const UnprofiledTimes times = unprofiled_times_into(g, base);
  std::optional<PhaseTimer> t(std::in_place, "critical_path/unprofiled/analyse");
  Analysis a = analyse(g, base.dur, base.lag);
  t.reset();
  return unprofiled_analysis(g, base, recorded, times, std::move(a));
}

BothAnalyses analyse_and_index(const Graph& g, WhatIfBase& base) {
  // The recorded analysis reads the graph alone; the un-profiled times and
  // the replay index's lists of the graph's edges and nodes too: side by
  // side. Then the un-profiled analysis beside the syncs' waits on its
  // times, which both only read. Each writes its own fields of `base`.
  BothAnalyses out;
  UnprofiledTimes times;
  run_on_two_threads({[&] { out.recorded = analyse(g); },
                      [&] {
                        times = unprofiled_times_into(g, base);
                        detail::index_graph_for_replays(g, base);
                      }});
  Analysis a;
  run_on_two_threads({[&] {
                        PhaseTimer t("critical_path/unprofiled/analyse");
                        a = analyse(g, base.dur, base.lag);
                      },
                      [&] { detail::index_times_for_replays(g, base); }});
  out.unprofiled = unprofiled_analysis(g, base, out.recorded, times, std::move(a));
  return out;
}

namespace {

Analysis unprofiled_analysis(const Graph& g, WhatIfBase& base, const Analysis& recorded,
                             const UnprofiledTimes& times, Analysis a) {
  PhaseTimer t("critical_path/unprofiled/rest");
  const std::vector<double>& plain_dur = times.plain_dur;
  const std::vector<double>& plain_lag = times.plain_lag;
  const std::vector<Interference>& found = times.found;
  base.step_time_us = a.step_time_us;
  base.bounds = iteration_bounds(a);
  base.recorded_step_time_us = recorded.step_time_us;
  base.recorded_bounds = iteration_bounds(recorded);
  a.model = kModelUnprofiled;
  a.recorded_step_time_us = recorded.step_time_us;
  a.recorded_profiler_step_us = recorded.profiler_step_us;
  a.estimated_unprofiled_step_us = a.step_time_us;
  // The host time taken out inside the iterations, per iteration.
  double first = 1e300, last = -1e300;
  for (const Iteration& it : g.iterations) {
    first = std::min(first, it.start);
    last = std::max(last, it.end);
  }
  // Decode steps inside ProfilerSteps (Graph::profiler_steps): the prefills
  // between them are no iteration's, so only the iterations' own windows.
  std::vector<std::pair<double, double>> windows;
  if (!g.profiler_steps.empty())
    for (const Iteration& it : g.iterations) windows.emplace_back(it.start, it.end);
  std::sort(windows.begin(), windows.end());
  std::vector<std::pair<double, double>> merged;  // overlapping windows joined
  for (const auto& w : windows)
    if (!merged.empty() && w.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, w.second);
    else
      merged.push_back(w);
  windows = std::move(merged);
  auto inside = [&](double t) {
    if (!(t >= first && t < last)) return false;
    if (windows.empty()) return true;
    auto w = std::upper_bound(windows.begin(), windows.end(),
                              std::make_pair(t, std::numeric_limits<double>::infinity()));
    return w != windows.begin() && t < std::prev(w)->second;
  };
  double removed = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (g.nodes[n].kind != NodeKind::Gpu && inside(g.nodes[n].start))
      removed += g.nodes[n].dur - plain_dur[n];  // host time (the backlog is GPU time)
  for (size_t k = 0; k < g.edges.size(); ++k)
    if (inside(g.nodes[g.edges[k].from].start)) removed += g.edges[k].lag - plain_lag[k];
  a.profiler_host_us_per_step =
      g.iterations.empty() ? 0.0 : removed / static_cast<double>(g.iterations.size());
  a.profiler_cost = g.profiler_cost;
  std::string interference;
  for (const Interference& f : found)
    interference += fmt::format(
        "{}{} ran the same host calls as the fastest iteration with gaps {:.2f}x as long on one "
        "thread (interference, not the program: scaled back)",
        interference.empty() ? "; " : ", ", g.iterations[f.iteration].name, 1 / f.factor);
  for (const Interference& f : found)
    a.notes.push_back(fmt::format(
        "{} {} ran the same host calls as the fastest iteration with gaps {:.2f}x as long on "
        "one thread: something else ran on the host (interference, not the program); the "
        "un-profiled estimate scales its gaps back",
        kInterferenceNote, g.iterations[f.iteration].name, 1 / f.factor));
  a.summary = fmt::format(
      "without the profiler (estimated; the trace records {:.1f} us, of which ~{:.1f} us per "
      "iteration is the profiler's host time{}): {}",
      a.recorded_step_time_us, a.profiler_host_us_per_step, interference, a.summary);
  return a;
}

}  // namespace

}  // namespace jarvis::critical_path
