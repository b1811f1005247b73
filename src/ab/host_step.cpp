// host_only_step (host_step.h).
#include "ab/host_step.h"

#include <algorithm>
#include <vector>

namespace jarvis::ab {
namespace {

// What the profiler spent on one recorded host event (its enter and exit
// records; with record_shapes, per recorded input), by the model's costs.
double host_event_cost_us(const Trace& trace, Uid u, const critical_path::ProfilerCost& cost,
                          uint32_t memory_name, bool any_memory) {
  const Event& e = trace.events[u];
  if (e.cat == Cat::CpuOp) {
    const PyValue* dims = trace.arg(u, "Input Dims");
    const size_t inputs = dims && dims->is_seq() ? dims->size() : 0;
    return cost.per_op_us + cost.per_input_us * static_cast<double>(inputs);
  }
  if (e.cat == Cat::PythonFunction) return cost.per_python_frame_us;
  if (any_memory && e.cat == Cat::CpuInstantEvent && e.name == memory_name)
    return cost.per_memory_event_us;
  return 0;
}

constexpr double kHostKeptShare = 0.1;  // as the critical path's un-profiled host

double host_step_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

bool has_gpu_work(const Trace& trace) {
  return std::any_of(trace.events.begin(), trace.events.end(),
                     [](const Event& e) { return e.is_gpu(); });
}

std::optional<HostStep> host_only_step(const Trace& trace, const CallTree& tree,
                                       const critical_path::ProfilerCostModel& model) {
  std::vector<Uid> steps;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (e.has_ts() && e.has_dur() && e.dur() > 0 && trace.name(u).starts_with("ProfilerStep#"))
      steps.push_back(u);
  }
  if (steps.empty()) return std::nullopt;
  HostStep out;
  out.cost = critical_path::measure_profiler_cost(trace, tree, model);
  uint32_t memory_name = 0;
  const bool any_memory = trace.strings.find("[memory]", memory_name);
  // Events by thread and start, to sum those inside a step's window.
  std::vector<Uid> by_time;
  for (Uid u = 0; u < trace.events.size(); ++u)
    if (trace.events[u].has_ts() &&
        host_event_cost_us(trace, u, out.cost, memory_name, any_memory) > 0)
      by_time.push_back(u);
  std::sort(by_time.begin(), by_time.end(),
            [&](Uid a, Uid b) { return trace.events[a].ts_ns < trace.events[b].ts_ns; });
  // Per step; the medians are kept (one step disturbed by another process
  // moves a mean of three to five steps by half its excess).
  std::vector<double> recorded, profiler, untraced, estimated;
  for (Uid s : steps) {
    const Event& step = trace.events[s];
    const double from = step.ts(), to = step.end();
    double in_step = 0;
    auto first = std::lower_bound(by_time.begin(), by_time.end(), step.ts_ns,
                                  [&](Uid u, int64_t t) { return trace.events[u].ts_ns < t; });
    for (auto it = first; it != by_time.end() && trace.events[*it].ts() < to; ++it)
      if (trace.events[*it].thread == step.thread)
        in_step += host_event_cost_us(trace, *it, out.cost, memory_name, any_memory);
    // The step's top-level ops (by time: the outermost recorded ops on its
    // thread): the time between them is Python's, less the records of each
    // (half before its start, half after its end).
    std::vector<Uid> inside;
    for (auto it = first; it != by_time.end() && trace.events[*it].ts() < to; ++it) {
      const Event& e = trace.events[*it];
      if (*it != s && e.thread == step.thread && e.has_dur() && e.cat == Cat::CpuOp)
        inside.push_back(*it);
    }
    std::stable_sort(inside.begin(), inside.end(), [&](Uid x, Uid y) {
      const Event &a = trace.events[x], &b = trace.events[y];
      return a.ts_ns != b.ts_ns ? a.ts_ns < b.ts_ns : a.dur_ns > b.dur_ns;
    });
    double covered = 0, top_cost = 0, last_end = from;
    for (Uid c : inside) {
      const Event& e = trace.events[c];
      if (e.ts() < last_end) continue;  // nested in (or overlapping) the op before
      const double end = std::min(e.end(), to);
      if (end > e.ts()) covered += end - e.ts();
      last_end = std::max(last_end, end);
      top_cost += host_event_cost_us(trace, c, out.cost, memory_name, any_memory);
    }
    const double gaps = std::max(0.0, step.dur() - covered);
    untraced.push_back(std::max(kHostKeptShare * gaps, gaps - top_cost));
    recorded.push_back(step.dur());
    profiler.push_back(std::min(in_step, (1 - kHostKeptShare) * step.dur()));
    estimated.push_back(step.dur() - profiler.back());
  }
  out.steps = steps.size();
  out.recorded_step_us = host_step_median(recorded);
  out.profiler_us_per_step = host_step_median(profiler);
  out.estimated_unprofiled_step_us = host_step_median(estimated);
  out.untraced_us_per_step = host_step_median(untraced);
  return out;
}

}  // namespace jarvis::ab

namespace jarvis::ab {

std::optional<StepEvents> step_events(const Trace& trace, const CallTree& tree) {
  std::vector<Uid> steps;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (e.has_ts() && e.has_dur() && e.dur() > 0 && trace.name(u).starts_with("ProfilerStep#"))
      steps.push_back(u);
  }
  if (steps.empty()) return std::nullopt;
  StepEvents out;
  // The built-in model: the trace's own gap, never a calibration's fallback.
  const critical_path::ProfilerCost cost =
      critical_path::measure_profiler_cost(trace, tree, critical_path::ProfilerCostModel{});
  out.op_gap_us = cost.op_gap_us;
  out.gaps_measured = cost.gaps_measured;
  out.record_shapes = cost.record_shapes;
  uint32_t memory_name = 0;
  const bool any_memory = trace.strings.find("[memory]", memory_name);
  std::vector<double> recorded;
  for (Uid s : steps) {
    const Event& step = trace.events[s];
    recorded.push_back(step.dur());
    for (Uid u = 0; u < trace.events.size(); ++u) {
      const Event& e = trace.events[u];
      if (u == s || e.thread != step.thread || !e.has_ts() || e.ts() < step.ts() ||
          e.ts() >= step.end())
        continue;
      if (e.cat == Cat::CpuOp) {
        out.ops += 1;
        const PyValue* dims = trace.arg(u, "Input Dims");
        out.inputs += dims && dims->is_seq() ? static_cast<double>(dims->size()) : 0.0;
      } else if (e.is_runtime()) {
        out.runtime_calls += 1;
      } else if (e.cat == Cat::PythonFunction) {
        out.python_frames += 1;
      } else if (any_memory && e.cat == Cat::CpuInstantEvent && e.name == memory_name) {
        out.memory_events += 1;
      }
    }
  }
  const double n = static_cast<double>(steps.size());
  out.steps = steps.size();
  out.recorded_step_us = host_step_median(recorded);
  out.ops /= n;
  out.inputs /= n;
  out.python_frames /= n;
  out.memory_events /= n;
  out.runtime_calls /= n;
  return out;
}

}  // namespace jarvis::ab
