// Whole-capture and per-iteration step views (step_views.h).
#include "compare/step_views.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "critical_path/critical_path.h"

namespace jarvis {
namespace {

using nlohmann::json;

int64_t device_of(const Trace& trace, const Event& e) {
  int64_t d = trace.device(e);
  return d != kNoInt ? d : trace.pid(e).value;
}

StepWindow window_of(const Trace& trace, const std::vector<Uid>& kernels) {
  StepWindow w;
  std::map<int64_t, std::pair<int64_t, int64_t>> span;  // device -> (first start, last end)
  bool first = true;
  for (Uid uid : kernels) {
    const Event& e = trace.events[uid];
    const int64_t start = e.ts_ns, end = e.ts_ns + e.dur_ns;
    auto [it, fresh] = span.try_emplace(device_of(trace, e), start, end);
    it->second.first = std::min(it->second.first, start);
    it->second.second = std::max(it->second.second, end);
    w.start_ns = first ? start : std::min(w.start_ns, start);
    w.end_ns = first ? end : std::max(w.end_ns, end);
    first = false;
    w.kernel_ns += e.dur_ns;
    ++w.kernels;
    auto& k = w.by_kernel[std::string(trace.name(uid))];
    ++k.first;
    k.second += e.dur_ns;
  }
  for (const auto& [device, s] : span) {
    w.span_ns_by_device[device] = s.second - s.first;
    w.step_ns += s.second - s.first;
  }
  return w;
}

// A host window [start, end] of one iteration on the main thread.
using HostWindow = std::pair<int64_t, int64_t>;

struct Launch {
  int64_t kernel_start = 0, kernel_end = 0;
  int64_t call_start = 0, call_end = 0;
};

// ProfilerStep#N ranges on the main thread (NVTX ranges of that name become
// user annotations), each its own window.
std::vector<HostWindow> profiler_steps(const Trace& trace, ProcId pid, ProcId tid) {
  std::vector<HostWindow> out;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (e.cat == Cat::UserAnnotation && e.has_ts() && trace.pid(e) == pid && trace.tid(e) == tid &&
        trace.name(u).starts_with("ProfilerStep#"))
      out.push_back({e.ts_ns, e.ts_ns + e.dur_ns});
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Where GPU work of the main thread pauses for more than kIterationGapNs, a
// new iteration begins at the launch of the kernel after the pause (the
// windows are host time, as the launches that bound them).
std::vector<HostWindow> gpu_gap_windows(std::vector<Launch> launches) {
  std::vector<HostWindow> out;
  if (launches.empty()) return out;
  std::sort(launches.begin(), launches.end(), [](const Launch& a, const Launch& b) {
    return std::tie(a.kernel_start, a.call_start) < std::tie(b.kernel_start, b.call_start);
  });
  std::vector<int64_t> bounds;
  int64_t first_call = launches.front().call_start, last_end = launches.front().kernel_end;
  int64_t last_call_end = launches.front().call_end;
  bounds.push_back(first_call);
  for (size_t k = 1; k < launches.size(); ++k) {
    const Launch& l = launches[k];
    if (l.kernel_start - last_end > kIterationGapNs) bounds.push_back(l.call_start);
    last_end = std::max(last_end, l.kernel_end);
  }
  for (const Launch& l : launches) {
    bounds.front() = std::min(bounds.front(), l.call_start);
    last_call_end = std::max(last_call_end, l.call_end);
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  if (last_call_end > bounds.back()) bounds.push_back(last_call_end);
  for (size_t k = 0; k + 1 < bounds.size(); ++k) out.push_back({bounds[k], bounds[k + 1]});
  return out;
}

}  // namespace

std::optional<StepViews> step_views(const Trace& trace, const CallTree& tree,
                                    const std::string& source) {
  const bool any = source == "auto";
  if (!any && source != kStepsFromProfilerStep && source != kStepsFromRepeats &&
      source != kStepsFromGpuGaps)
    throw std::invalid_argument(fmt::format("iterations '{}': expected auto, {}, {} or {}", source,
                                            kStepsFromProfilerStep, kStepsFromRepeats,
                                            kStepsFromGpuGaps));
  std::vector<Uid> kernels;
  std::unordered_map<int64_t, Uid> calls;  // correlation -> runtime call
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (!e.has_ts() || !e.has_dur()) continue;
    if (e.cat == Cat::Kernel)
      kernels.push_back(u);
    else if (e.cat == Cat::CudaRuntime && trace.correlation(e) != kNoInt)
      calls.emplace(trace.correlation(e), u);
  }
  if (kernels.empty()) return std::nullopt;
  StepViews v;
  v.whole = window_of(trace, kernels);
  v.first_device = v.whole.span_ns_by_device.begin()->first;

  // The main thread: the one that launched most kernels on the first GPU.
  std::map<std::pair<ProcId, ProcId>, std::vector<std::pair<Uid, Uid>>> by_thread;
  for (Uid k : kernels) {
    const Event& e = trace.events[k];
    if (device_of(trace, e) != v.first_device) continue;
    auto c = calls.find(trace.correlation(e));
    if (c == calls.end()) continue;
    const Event& call = trace.events[c->second];
    by_thread[{trace.pid(call), trace.tid(call)}].push_back({k, c->second});
  }
  const std::vector<std::pair<Uid, Uid>>* main = nullptr;
  for (const auto& [thread, launched] : by_thread)
    if (!main || launched.size() > main->size()) {
      main = &launched;
      std::tie(v.main_pid, v.main_tid) = thread;
    }
  if (!main) {
    v.method =
        fmt::format("no iterations: no kernel of GPU {} is linked to its launch (correlation id)",
                    v.first_device);
    return v;
  }

  // Iteration windows on the main thread's host time.
  std::vector<HostWindow> windows;
  std::optional<critical_path::Repeats> repeats;
  if (any || source == kStepsFromProfilerStep)
    windows = profiler_steps(trace, v.main_pid, v.main_tid);
  if (windows.empty() && (any || source == kStepsFromRepeats))
    repeats = critical_path::detect_repeats(trace, tree);
  if (!windows.empty()) {
    v.iterations_source = kStepsFromProfilerStep;
    v.method = fmt::format("{} ProfilerStep#N range(s) on the main thread", windows.size());
  } else if (repeats) {
    const Event& first = trace.events[repeats->starts.front()];
    v.main_pid = trace.pid(first);
    v.main_tid = trace.tid(first);
    int64_t end = 0;
    for (Uid u = 0; u < trace.events.size(); ++u) {
      const Event& e = trace.events[u];
      if (e.cat == Cat::CudaRuntime && e.has_ts() && trace.pid(e) == v.main_pid &&
          trace.tid(e) == v.main_tid)
        end = std::max(end, e.ts_ns + e.dur_ns);
    }
    if (repeats->after != kNoUid) end = trace.events[repeats->after].ts_ns;
    for (size_t k = 0; k < repeats->starts.size(); ++k)
      windows.push_back(
          {trace.events[repeats->starts[k]].ts_ns,
           k + 1 < repeats->starts.size() ? trace.events[repeats->starts[k + 1]].ts_ns : end});
    v.iterations_source = kStepsFromRepeats;
    v.method = fmt::format("{} repeats of the launch sequence ({} launches each)", repeats->count,
                           repeats->period);
  } else if (any || source == kStepsFromGpuGaps) {
    std::vector<Launch> launches;
    for (const auto& [k, c] : *main) {
      const Event &ke = trace.events[k], &ce = trace.events[c];
      launches.push_back({ke.ts_ns, ke.ts_ns + ke.dur_ns, ce.ts_ns, ce.ts_ns + ce.dur_ns});
    }
    windows = gpu_gap_windows(std::move(launches));
    v.iterations_source = kStepsFromGpuGaps;
    v.method = fmt::format(
        "{}iterations begin where GPU {}'s kernels of the main thread pause "
        "for more than {} ms",
        any ? "no ProfilerStep#N ranges and no repeating launch sequence: " : "", v.first_device,
        static_cast<double>(kIterationGapNs) / 1e6);
  } else {
    v.method = fmt::format("no iterations found by {}", source);
  }

  // Each window: the main thread's launches inside it (a call that starts in
  // it and returns by its end) give the GPU window; the iteration is every
  // kernel, on every GPU, wholly inside that GPU window.
  std::vector<std::pair<int64_t, int64_t>> launched;  // call start, call end (main thread)
  std::vector<Uid> main_kernels;
  for (Uid k : kernels) {
    auto c = calls.find(trace.correlation(trace.events[k]));
    if (c == calls.end()) continue;
    const Event& call = trace.events[c->second];
    if (trace.pid(call) == v.main_pid && trace.tid(call) == v.main_tid) main_kernels.push_back(k);
  }
  for (const HostWindow& w : windows) {
    int64_t lo = 0, hi = 0;
    bool any = false;
    for (Uid k : main_kernels) {
      const Event& call = trace.events[calls.at(trace.correlation(trace.events[k]))];
      if (call.ts_ns < w.first || call.ts_ns > w.second || call.ts_ns + call.dur_ns > w.second)
        continue;
      const Event& e = trace.events[k];
      lo = any ? std::min(lo, e.ts_ns) : e.ts_ns;
      hi = any ? std::max(hi, e.ts_ns + e.dur_ns) : e.ts_ns + e.dur_ns;
      any = true;
    }
    if (!any) continue;
    std::vector<Uid> inside;
    for (Uid k : kernels) {
      const Event& e = trace.events[k];
      if (e.ts_ns >= lo && e.ts_ns + e.dur_ns <= hi) inside.push_back(k);
    }
    v.iterations.push_back(window_of(trace, inside));
  }
  if (v.iterations.empty()) {
    v.iterations_source.clear();
    v.method += ": no iteration launched a kernel";
  }
  return v;
}

namespace {

double ms(int64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

json window_json(const StepWindow& w) {
  json spans = json::object();
  for (const auto& [device, ns] : w.span_ns_by_device) spans[std::to_string(device)] = ms(ns);
  return {{"step_ms", ms(w.step_ns)},   {"kernel_ms", ms(w.kernel_ns)}, {"kernels", w.kernels},
          {"gpu_start_ns", w.start_ns}, {"gpu_end_ns", w.end_ns},       {"span_ms_by_gpu", spans}};
}

json change(double ref, double tgt) {
  return {{"delta_ms", tgt - ref},
          {"delta_pct", ref > 0 ? json(100.0 * (tgt - ref) / ref) : json()}};
}

// Step-time verdict: a change inside the single-run noise floor is not
// called; past the threshold it is a likely regression / improvement.
constexpr double kNoiseFloorPct = 2.0, kThresholdPct = 5.0;

std::string verdict_of(double pct) {
  if (std::abs(pct) < kNoiseFloorPct) return "neutral";
  if (pct >= kThresholdPct) return "regression_likely";
  if (pct <= -kThresholdPct) return "improvement_likely";
  return "neutral";
}

}  // namespace

json compare_step_views(const StepViews& ref, const StepViews& tgt, const std::string& ref_tag,
                        const std::string& tgt_tag, size_t iteration, size_t top_n) {
  json out;
  out["whole_capture"] = {{ref_tag, window_json(ref.whole)}, {tgt_tag, window_json(tgt.whole)}};
  out["whole_capture"].update(change(ms(ref.whole.step_ns), ms(tgt.whole.step_ns)));
  out["whole_capture"]["kernel_time"] = change(ms(ref.whole.kernel_ns), ms(tgt.whole.kernel_ns));
  auto side = [](const StepViews& v) {
    json steps = json::array();
    for (const StepWindow& w : v.iterations) steps.push_back(ms(w.step_ns));
    return json{{"source", v.iterations_source.empty() ? json() : json(v.iterations_source)},
                {"method", v.method},
                {"first_gpu", v.first_device},
                {"main_thread", {{"pid", v.main_pid.value}, {"tid", v.main_tid.value}}},
                {"step_ms", steps}};
  };
  out["iterations"] = {{ref_tag, side(ref)}, {tgt_tag, side(tgt)}};
  const bool aligned = iteration < ref.iterations.size() && iteration < tgt.iterations.size();
  double ref_ms = ms(ref.whole.step_ns), tgt_ms = ms(tgt.whole.step_ns);
  std::string view = "whole_capture", why;
  if (aligned) {
    const StepWindow &r = ref.iterations[iteration], &t = tgt.iterations[iteration];
    out["iteration"] = {{"index", iteration}, {ref_tag, window_json(r)}, {tgt_tag, window_json(t)}};
    out["iteration"].update(change(ms(r.step_ns), ms(t.step_ns)));
    out["iteration"]["kernel_time"] = change(ms(r.kernel_ns), ms(t.kernel_ns));
    // Per kernel name inside the aligned iteration, largest change first.
    std::map<std::string, std::pair<std::pair<size_t, int64_t>, std::pair<size_t, int64_t>>> names;
    for (const auto& [name, ct] : r.by_kernel) names[name].first = ct;
    for (const auto& [name, ct] : t.by_kernel) names[name].second = ct;
    std::vector<json> rows;
    for (const auto& [name, sides] : names)
      rows.push_back({{"kernel", name},
                      {ref_tag + "_count", sides.first.first},
                      {tgt_tag + "_count", sides.second.first},
                      {ref_tag + "_ms", ms(sides.first.second)},
                      {tgt_tag + "_ms", ms(sides.second.second)},
                      {"delta_ms", ms(sides.second.second - sides.first.second)}});
    std::stable_sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
      return std::abs(a["delta_ms"].get<double>()) > std::abs(b["delta_ms"].get<double>());
    });
    if (rows.size() > top_n) rows.resize(top_n);
    out["iteration"]["kernels"] = rows;
    ref_ms = ms(r.step_ns);
    tgt_ms = ms(t.step_ns);
    view = fmt::format("iteration {}", iteration);
    why = fmt::format(
        "iteration {} on each side ({}), aligned by its index; the whole capture ({:.2f} -> "
        "{:.2f} ms) is set by how long the capture ran as much as by the code",
        iteration,
        ref.method == tgt.method ? ref.method : fmt::format("{}; {}", ref.method, tgt.method),
        ms(ref.whole.step_ns), ms(tgt.whole.step_ns));
  } else {
    out["iteration"] = nullptr;
    why = fmt::format("iteration {} is not found on both sides ({} has {}, {} has {})", iteration,
                      ref_tag, ref.iterations.size(), tgt_tag, tgt.iterations.size());
  }
  const double pct = ref_ms > 0 ? 100.0 * (tgt_ms - ref_ms) / ref_ms : 0.0;
  const std::string verdict = ref_ms > 0 ? verdict_of(pct) : "inconclusive";
  out["verdict"] = {
      {"view", view},
      {"verdict", verdict},
      {"reference_step_ms", ref_ms},
      {"target_step_ms", tgt_ms},
      {"delta_pct", pct},
      {"text",
       fmt::format("{}: step time (sum over GPUs of each GPU's kernel span) {:.2f} -> "
                   "{:.2f} ms ({:+.1f}%): {} (thresholds: {}% change, {}% noise floor); "
                   "view used: {}",
                   view, ref_ms, tgt_ms, pct, verdict, kThresholdPct, kNoiseFloorPct, why)}};
  return out;
}

}  // namespace jarvis
