// Host time no op records (issue 73 point 3): Python work inside the step
// with no op in it (a batch built in numpy, logging, a metric computed on the
// host, an optimizer's bookkeeping) shows only as a stretch of the loop where
// no host thread records an event (critical_path/host_gaps.h). The
// un-profiled job still pays it; when the GPU has nothing queued it idles for
// it. One finding per place in the step (the events before and after the
// stretch), sized by the what-if that takes those stretches out
// (`remove_host_gaps` with the same place), on the un-profiled step.
#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/phase_timer.h"
#include "base/two_threads.h"
#include "critical_path/host_gaps.h"
#include "insights/idle_gaps.h"
#include "insights/rules_internal.h"
#include "insights/trace_facts.h"
#include "report/stats.h"

namespace jarvis::insights {
namespace {

// A stretch shorter than detail::kUnrecordedMinGapUs is the dispatcher's and
// the profiler's own time between two ops (a few us each), not Python work.
using detail::kUnrecordedMinGapUs;
// A place reported saves at least this much of each step, and 1 % of it
// (a stretch or two of Python between syncs in a benchmark loop does not).
constexpr double kUnrecordedMinSavingUs = 200;
constexpr size_t kUnrecordedMaxFindings = 3;

// The GPU idle inside [from, to) (trace time), from idle_gaps' gaps, and the
// host-opened part of it by idle place (what launch_bound claims).
struct UnrecordedIdle {
  double idle_us = 0;
  std::map<std::string, double> host_work_by_place;
};

// idle_gaps' gaps by start (IdleGaps::by_start), to find those a stretch
// overlaps without reading them all for each stretch (a tiled trace has
// 100,000s), and the longest gap.
struct IdleByStart {
  const std::vector<uint32_t>& order;
  double longest = 0;
};

IdleByStart idle_by_start(const IdleGaps& idle) {
  IdleByStart out{idle.by_start};
  for (const IdleGap& g : idle.gaps) out.longest = std::max(out.longest, g.dur_us);
  return out;
}

void add_unrecorded_idle(const InsightContext& c, const IdleGaps& idle, const IdleByStart& index,
                         double from, double to, UnrecordedIdle& out) {
  // The gaps that can overlap [from, to) (a gap starts at most `longest`
  // before it ends; a microsecond more for rounding), summed in idle.gaps'
  // own order so the sums are those of a pass over every gap.
  std::vector<size_t> near;
  auto it = std::lower_bound(index.order.begin(), index.order.end(), from - index.longest - 1.0,
                             [&](uint32_t k, double t) { return idle.gaps[k].start_us < t; });
  for (; it != index.order.end() && idle.gaps[*it].start_us < to; ++it) near.push_back(*it);
  std::sort(near.begin(), near.end());
  for (size_t k : near) {
    const IdleGap& g = idle.gaps[k];
    const double overlap = std::min(to, g.start_us + g.dur_us) - std::max(from, g.start_us);
    if (!(overlap > 0)) continue;
    out.idle_us += overlap;
    if (g.cause == IdleCause::HostWork)
      out.host_work_by_place[g.place == kNoUid ? std::string("(no launching op)")
                                               : std::string(c.trace.name(g.place))] += overlap;
  }
}

// Where in the step a place's stretches fall, which decides the advice:
// inside the optimizer's step (its Python between its kernels), at the step's
// start before the input's host-to-device copy (the data pipeline), or
// elsewhere (the code there, found by its Python frames).
enum class UnrecordedWhere { OptimizerStep, BeforeInputCopy, Elsewhere };

const char* unrecorded_where_name(UnrecordedWhere w) {
  return w == UnrecordedWhere::OptimizerStep     ? "optimizer_step"
         : w == UnrecordedWhere::BeforeInputCopy ? "step_start_before_input_copy"
                                                 : "elsewhere";
}

// The host's user annotations (ProfilerStep#N left out) and the launch calls
// of GPU work, by start: what the stretches' places are read against. Built
// once per trace, and only when a place is reported.
struct UnrecordedPlaceIndex {
  struct Span {
    double ts = 0, end = 0;
    uint32_t thread = 0;
    Uid uid = kNoUid;
  };
  std::vector<Span> annotations;
  std::vector<std::pair<double, bool>> launches;  // (ts, launched a host-to-device copy)
};

bool unrecorded_is_h2d_copy(std::string_view name) {
  return name.find("HtoD") != std::string_view::npos ||
         name.find("HostToDevice") != std::string_view::npos;
}

UnrecordedPlaceIndex unrecorded_place_index(const InsightContext& c) {
  UnrecordedPlaceIndex x;
  for (Uid u = 0; u < c.trace.events.size(); ++u) {
    const Event& e = c.trace.events[u];
    if (e.cat != Cat::UserAnnotation || !e.has_ts() || !e.has_dur() ||
        c.trace.name(u).starts_with("ProfilerStep#"))
      continue;
    x.annotations.push_back({e.ts(), e.end(), e.thread, u});
  }
  std::sort(x.annotations.begin(), x.annotations.end(),
            [](const auto& a, const auto& b) { return a.ts < b.ts; });
  for (Uid u : c.tree.runtime_uids()) {
    const auto gpu = c.tree.gpu_events(u);
    if (gpu.empty() || !c.trace.events[u].has_ts()) continue;
    bool h2d = false;
    for (Uid g : gpu) h2d = h2d || unrecorded_is_h2d_copy(c.trace.name(g));
    x.launches.emplace_back(c.trace.events[u].ts(), h2d);
  }
  std::sort(x.launches.begin(), x.launches.end());
  return x;
}

// The innermost user annotation of the stretch's thread around it: the
// stretch's own (critical_path's, from the call tree) else read here, since
// a trace's call tree need not nest ops under annotations.
std::string unrecorded_annotation(const InsightContext& c, const UnrecordedPlaceIndex& x,
                                  const critical_path::HostGap& g) {
  if (!g.annotation.empty()) return g.annotation;
  auto it = std::upper_bound(x.annotations.begin(), x.annotations.end(), g.from_us,
                             [](double t, const auto& a) { return t < a.ts; });
  while (it != x.annotations.begin()) {
    --it;
    if (it->thread == g.thread && it->end >= g.to_us) return std::string(c.trace.name(it->uid));
  }
  return "";
}

// At the step's start before its input copy: no GPU work launched in the
// iteration before the stretch, and the first launch after it copies from
// the host to the device.
bool unrecorded_before_input_copy(const UnrecordedPlaceIndex& x, const critical_path::HostGap& g) {
  const double step_start = g.from_us - g.offset_us;
  auto first =
      std::lower_bound(x.launches.begin(), x.launches.end(), std::make_pair(step_start, false));
  if (first != x.launches.end() && first->first < g.from_us) return false;
  auto next =
      std::lower_bound(x.launches.begin(), x.launches.end(), std::make_pair(g.to_us, false));
  return next != x.launches.end() && next->second;
}

}  // namespace

void rule_unrecorded_host_time(const InsightContext& c, std::vector<Insight>& out) {
  if (!c.step || c.step->graph.ranks.empty()) return;
  // A graph capture is not a step: its host time is the capture's, once.
  if (detail::graph_capture_calls(c) > 0) return;
  const auto& graph = c.step->graph;
  critical_path::HostGapSelector any;
  any.min_us = kUnrecordedMinGapUs;
  const std::vector<critical_path::HostGap>* found_gaps = nullptr;
  std::optional<PhaseTimer> timer(std::in_place, "insights/unrecorded_host_time/gaps");
  try {
    found_gaps = &detail::unrecorded_host_gaps(c);
  } catch (const std::runtime_error&) {  // a graph of other traces
    return;
  }
  timer.emplace("insights/unrecorded_host_time/places");
  const std::vector<critical_path::HostGap>& gaps = *found_gaps;
  if (gaps.empty()) return;
  std::map<std::pair<std::string, std::string>, std::vector<const critical_path::HostGap*>> places;
  std::set<std::pair<std::string, std::string>> handovers;
  for (const auto& g : gaps) {
    places[{g.after_name, g.before_name}].push_back(&g);
    // A stretch from one thread's last event to another's first is a
    // hand-over (autograd's engine starting the backward pass, the main
    // thread resuming after it): the framework's time, as launch overhead
    // is, not Python of the step's own. The what-if option takes it too.
    if (c.trace.events[g.after].thread != c.trace.events[g.before].thread)
      handovers.insert({g.after_name, g.before_name});
  }
  for (const auto& place : handovers) places.erase(place);
  const size_t iterations = std::max<size_t>(1, graph.iterations.size());
  const double steps = static_cast<double>(iterations);
  const double step_us = c.step->measured.step_time_us;
  const IdleGaps& idle = idle_gaps(c);
  const IdleByStart idle_index = idle_by_start(idle);
  std::vector<Insight> found;
  std::optional<UnrecordedPlaceIndex> place_index;  // built for the first place reported
  // Each place's what-if: the scenarios in turn (picked from the trace's
  // memoised stretches), then their replays two at a time (each a what-if on
  // the step model's one graph and base, which they only read).
  struct PlaceReplay {
    const std::pair<std::string, std::string>* place = nullptr;
    const std::vector<const critical_path::HostGap*>* list = nullptr;
    critical_path::Scenario change;
    std::optional<critical_path::WhatIfResult> result;
  };
  std::vector<PlaceReplay> replays;
  for (const auto& entry : places) {
    PlaceReplay p;
    p.place = &entry.first;
    p.list = &entry.second;
    critical_path::HostGapSelector sel = any;
    sel.after = entry.first.first;
    sel.before = entry.first.second;
    try {
      detail::add_host_gap_removal(c, sel, p.change);
    } catch (const std::runtime_error&) {  // nothing left once the profiler's cost is out
      continue;
    }
    replays.push_back(std::move(p));
  }
  std::vector<std::function<void()>> tasks;
  for (PlaceReplay& p : replays)
    tasks.emplace_back([&c, &p] {
      try {
        p.result = detail::step_time_what_if(c, p.change, critical_path::StepDetail::Times, {},
                                             critical_path::RemovedUs::Sum);  // evidence
      } catch (const std::runtime_error&) {  // nothing left once the profiler's cost is out
      }
    });
  run_on_two_threads(tasks);
  for (const PlaceReplay& replay : replays) {
    if (!replay.result) continue;
    const auto& [after, before] = *replay.place;
    const auto& list = *replay.list;
    const critical_path::WhatIfResult& r = *replay.result;
    const double saving_per_step =
        std::max(0.0, r.measured_step_time_us - r.predicted_step_time_us);
    if (saving_per_step < std::max(kUnrecordedMinSavingUs, 0.01 * step_us)) continue;
    // Per step: the recorded stretches and the same less the profiler's
    // cost recorded inside them (the un-profiled host's).
    std::vector<double> recorded(iterations, 0.0), unprofiled(iterations, 0.0);
    UnrecordedIdle gpu;
    double offset = 0;
    std::string annotation;
    if (!place_index) place_index = unrecorded_place_index(c);
    size_t before_input = 0;
    for (const auto* g : list) {
      recorded[std::min(g->iteration, iterations - 1)] += g->dur();
      unprofiled[std::min(g->iteration, iterations - 1)] += g->dur() - g->profiler_us;
      add_unrecorded_idle(c, idle, idle_index, g->from_us, g->to_us, gpu);
      offset += g->offset_us;
      if (annotation.empty()) annotation = unrecorded_annotation(c, *place_index, *g);
      if (unrecorded_before_input_copy(*place_index, *g)) ++before_input;
    }
    const UnrecordedWhere where_in_step =
        annotation.starts_with("Optimizer.step") ? UnrecordedWhere::OptimizerStep
        : 2 * before_input > list.size()         ? UnrecordedWhere::BeforeInputCopy
                                                 : UnrecordedWhere::Elsewhere;
    offset /= static_cast<double>(list.size());
    const double mean_unprofiled =
        std::accumulate(unprofiled.begin(), unprofiled.end(), 0.0) / steps;
    const double median_unprofiled = stats::median(unprofiled);
    const double saving_total = saving_per_step * steps;
    Insight i;
    i.rule = "unrecorded_host_time";
    i.scope = "trace";
    i.category = "cpu_idle";
    i.time_us = std::accumulate(recorded.begin(), recorded.end(), 0.0);
    i.share = c.timeline && c.timeline->total_time > 0 ? i.time_us / c.timeline->total_time : 0;
    i.severity = detail::severity_by_step_saving(c, saving_total);
    i.gain_upper_bound_us = saving_total;
    i.step_saving_us = saving_total;
    i.gain_method =
        "the what-if without this host time (remove_host_gaps at this place), on the un-profiled "
        "step";
    // The GPU idle these stretches opened, by place: claimed before the
    // host-bound step's finding claims what is left of those places, and
    // never past what the what-if saves (a claim is at most the bound).
    double idle_total = 0;
    for (const auto& entry : gpu.host_work_by_place) idle_total += entry.second;
    const double idle_scale = idle_total > saving_total ? saving_total / idle_total : 1.0;
    for (const auto& [place, us] : gpu.host_work_by_place) i.idle_claim_us[place] = us * idle_scale;
    i.what_if = {
        {"remove_host_gaps", {{"after", after}, {"before", before}, {"min_us", any.min_us}}}};
    const std::string where =
        fmt::format("after {}, before {}{}", after, before,
                    annotation.empty() ? "" : fmt::format(" (inside {})", annotation));
    i.title = fmt::format(
        "Host time no op records: {:.2f} ms per step {} ({:.1f} ms into the step, {:.1f} per "
        "step), the GPU idle {:.2f} ms per step of it; without it the step is {:.2f} ms shorter",
        mean_unprofiled / 1e3, where, offset / 1e3, static_cast<double>(list.size()) / steps,
        gpu.idle_us / steps / 1e3, saving_per_step / 1e3);
    i.detail =
        "Between these two recorded events the host runs code that calls no op and launches "
        "nothing (Python: batch preparation, logging, a metric on the host, bookkeeping), and the "
        "GPU, with nothing queued, waits. The time is the program's, not the profiler's: no "
        "event is recorded in it, so the un-profiled step pays it too.";
    i.evidence = {{"after", after},
                  {"before", before},
                  {"annotation", annotation},
                  {"stretches", list.size()},
                  {"stretches_per_step", static_cast<double>(list.size()) / steps},
                  {"offset_in_step_us_mean", offset},
                  {"host_us_per_step_recorded_mean", i.time_us / steps},
                  {"host_us_per_step_unprofiled_mean", mean_unprofiled},
                  {"host_us_per_step_unprofiled_median", median_unprofiled},
                  {"profiler_us_inside_total", i.time_us - mean_unprofiled * steps},
                  {"gpu_idle_us_per_step_recorded", gpu.idle_us / steps},
                  {"min_stretch_us", any.min_us},
                  {"what_if_removed_us_per_step", r.removed_us},
                  {"where_in_step", unrecorded_where_name(where_in_step)},
                  {"stretches_before_input_copy", before_input}};
    // The advice follows where the stretch is (issue 73's blind run: an
    // optimizer's stretch was sent to the DataLoader).
    switch (where_in_step) {
      case UnrecordedWhere::OptimizerStep:
        i.action_model = fmt::format(
            "Inside the optimizer step ({}): the optimizer's Python between its kernels "
            "(per-parameter state set-up and loops). fused=True (one kernel per parameter "
            "group; foreach=True where no fused kernel exists), capturable=True with the step "
            "in a CUDA graph, or torch.compile of the optimizer step.",
            annotation);
        break;
      case UnrecordedWhere::BeforeInputCopy:
        i.action_model =
            "At the step's start, before the input is copied to the GPU: the data pipeline. "
            "Build batches in DataLoader workers (num_workers >= 4, prefetch_factor 2-4, "
            "persistent_workers=True), pin_memory=True with .to(device, non_blocking=True), or "
            "build the batch on the GPU.";
        break;
      case UnrecordedWhere::Elsewhere:
        i.action_model = fmt::format(
            "Find the Python between {} and {} (re-profile with with_stack=True, or py-spy) and "
            "take it off the step's path: log and compute host metrics every N steps or on "
            "another thread, keep tensors on the GPU instead of numpy / .tolist() round trips, "
            "and move Python loops over layers or parameters into fused or compiled code.",
            after, before);
        break;
    }
    i.action_kernel = "None: the kernels are not the cause.";
    i.verify = fmt::format(
        "Re-profile with with_stack=True: the Python frames between {} and {} name the code; "
        "after the fix the stretch is gone and the GPU has no gap there.",
        after, before);
    found.push_back(std::move(i));
  }
  std::stable_sort(found.begin(), found.end(), [](const Insight& a, const Insight& b) {
    return *a.step_saving_us > *b.step_saving_us;
  });
  if (found.size() > kUnrecordedMaxFindings) found.resize(kUnrecordedMaxFindings);
  for (Insight& i : found) out.push_back(std::move(i));
}

}  // namespace jarvis::insights
