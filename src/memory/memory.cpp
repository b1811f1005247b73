// The analysis: attribution of samples to ops, the per-device replay of the
// allocator, per-step memory and the findings (memory.h has the model).
#include "memory/memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

#include "memory/memory_internal.h"
#include "nsys/export.h"
#include "trace/expansion_budget.h"
#include "trace/module_path.h"
#include "xplane/space.h"

namespace jarvis::memory {
namespace {

constexpr std::string_view kModulePrefix = "nn.Module: ";
constexpr std::string_view kStepPrefix = "ProfilerStep#";

// --- attribution ------------------------------------------------------------

struct Span {
  Uid uid;
  int64_t start, end;
};

bool is_span(const Event& e) {
  return e.ph == Phase::Complete && e.has_ts() && e.has_dur() &&
         (e.cat == Cat::CpuOp || e.cat == Cat::PythonFunction);
}

// "nn.Module: Qwen2MLP_0" -> "Qwen2MLP_0".
std::string_view module_instance(std::string_view name) {
  return name.substr(kModulePrefix.size());
}

// "Qwen2MLP_0" -> "Qwen2MLP": instances of one class group together.
std::string module_class(std::string_view instance) {
  size_t us = instance.rfind('_');
  if (us == std::string_view::npos || us + 1 == instance.size()) return std::string(instance);
  for (size_t k = us + 1; k < instance.size(); ++k)
    if (instance[k] < '0' || instance[k] > '9') return std::string(instance);
  return std::string(instance.substr(0, us));
}

// Fills op / module / frame of `a` from the spans open at its time, innermost
// last on `open`.
// `modules` is scratch space (instance names, innermost first). What each
// allocation copies is charged to `budget`.
void attribute(const Trace& trace, const std::vector<Span>& open, int64_t t, Allocation& a,
               std::vector<std::string_view>& modules, ExpansionBudget& budget) {
  a.op = "(no op)";
  bool have_frame = false;
  modules.clear();
  for (auto it = open.rbegin(); it != open.rend(); ++it) {
    if (it->end < t) continue;  // an ended span under a longer one (imperfect nesting)
    const Event& e = trace.events[it->uid];
    std::string_view name = trace.str(e.name);
    if (e.cat == Cat::CpuOp) {
      if (a.op_uid == kNoUid) {
        a.op_uid = it->uid;
        a.op = std::string(name);
      }
    } else if (name.starts_with(kModulePrefix)) {
      if (a.module.empty()) a.module = module_class(module_instance(name));
      modules.push_back(module_instance(name));
    } else if (!have_frame) {
      a.python_frame = std::string(name);
      have_frame = true;
    }
  }
  a.module_path = join_module_path(modules.size(), [&](size_t k) {
    return modules[modules.size() - 1 - k];  // outermost first
  });
  budget.charge(sizeof(Allocation) + a.op.size() + a.module.size() + a.python_frame.size() +
                    a.module_path.size(),
                "the allocations' op, module and frame names");
}

// Attributes every allocation sample (index into `samples`) by a sweep over
// the cpu_op and python spans of its thread.
std::unordered_map<Uid, Allocation> attribute_allocations(
    const Trace& trace, const std::vector<MemorySample>& samples) {
  std::unordered_map<uint32_t, std::vector<const MemorySample*>> by_thread;
  for (const MemorySample& s : samples)
    if (s.bytes > 0) by_thread[s.thread].push_back(&s);
  std::unordered_map<uint32_t, std::vector<Span>> spans;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (is_span(e) && by_thread.count(e.thread))
      spans[e.thread].push_back({u, e.ts_ns, e.ts_ns + e.dur_ns});
  }
  std::unordered_map<Uid, Allocation> out;
  ExpansionBudget budget(trace.path, std::max(trace.json_bytes, trace.file_bytes));
  std::vector<std::string_view> modules;
  for (auto& [thread, allocs] : by_thread) {
    std::vector<Span>& list = spans[thread];
    // Outer spans first where two start together, so the stack nests.
    std::sort(list.begin(), list.end(), [](const Span& a, const Span& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    std::vector<Span> open;
    size_t next = 0;
    for (const MemorySample* s : allocs) {
      for (; next < list.size() && list[next].start <= s->ts_ns; ++next) {
        while (!open.empty() && open.back().end < list[next].start) open.pop_back();
        open.push_back(list[next]);
      }
      while (!open.empty() && open.back().end < s->ts_ns) open.pop_back();
      Allocation a;
      a.uid = s->uid;
      a.ts_ns = s->ts_ns;
      a.addr = s->addr;
      a.bytes = s->bytes;
      attribute(trace, open, s->ts_ns, a, modules, budget);
      out.emplace(s->uid, std::move(a));
    }
  }
  return out;
}

// --- steps ------------------------------------------------------------------

struct StepSpan {
  std::string name;
  int64_t start, end;
};

std::vector<StepSpan> profiler_steps(const Trace& trace) {
  std::vector<StepSpan> steps;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (e.cat != Cat::UserAnnotation || e.ph != Phase::Complete || !e.has_ts() || !e.has_dur())
      continue;
    std::string_view name = trace.str(e.name);
    if (name.starts_with(kStepPrefix))
      steps.push_back({std::string(name), e.ts_ns, e.ts_ns + e.dur_ns});
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const StepSpan& a, const StepSpan& b) { return a.start < b.start; });
  return steps;
}

// The step whose span holds t, "" when none.
std::string step_at(const std::vector<StepSpan>& steps, int64_t t) {
  auto it = std::upper_bound(steps.begin(), steps.end(), t,
                             [](int64_t x, const StepSpan& s) { return x < s.start; });
  if (it == steps.begin()) return {};
  --it;
  return t <= it->end ? it->name : std::string();
}

StepMemory step_memory(const StepSpan& span, const std::vector<const MemorySample*>& samples) {
  StepMemory m;
  m.name = span.name;
  m.start_ns = span.start;
  m.end_ns = span.end;
  auto first = std::lower_bound(samples.begin(), samples.end(), span.start,
                                [](const MemorySample* s, int64_t t) { return s->ts_ns < t; });
  // Before the step: after the last earlier sample, else before the first.
  if (first != samples.begin())
    m.allocated_at_start = (*(first - 1))->total_allocated;
  else if (!samples.empty())
    m.allocated_at_start = samples.front()->total_allocated - samples.front()->bytes;
  m.allocated_at_end = m.peak_allocated = m.allocated_at_start;
  m.peak_ts_ns = span.start;
  bool seen = false;
  for (auto it = first; it != samples.end() && (*it)->ts_ns <= span.end; ++it) {
    const MemorySample& s = **it;
    ++m.samples;
    m.allocated_at_end = s.total_allocated;
    if (!seen || s.total_allocated > m.peak_allocated) {
      m.peak_allocated = s.total_allocated;
      m.peak_reserved = s.total_reserved;
      m.peak_ts_ns = s.ts_ns;
      seen = true;
    }
  }
  return m;
}

int64_t median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void add_steps(DeviceMemory& d, const std::vector<StepSpan>& spans,
               const std::vector<const MemorySample*>& samples) {
  for (const StepSpan& span : spans) d.steps.push_back(step_memory(span, samples));
  std::vector<int64_t> later;
  for (size_t k = 1; k < d.steps.size(); ++k) later.push_back(d.steps[k].growth());
  d.growth_per_step = d.steps.size() > 1 ? median(later)
                      : d.steps.empty()  ? 0
                                         : d.steps[0].growth();
  d.grows_every_step = d.steps.size() >= 3 &&
                       std::all_of(later.begin(), later.end(), [](int64_t g) { return g > 0; });
}

// --- the replay -------------------------------------------------------------

bool larger_first(const Allocation& a, const Allocation& b) {
  return a.bytes != b.bytes ? a.bytes > b.bytes : a.uid < b.uid;
}

std::vector<Allocation> live_list(const std::map<uint64_t, const Allocation*>& live) {
  std::vector<Allocation> out;
  out.reserve(live.size());
  for (const auto& [addr, a] : live) out.push_back(*a);
  std::sort(out.begin(), out.end(), larger_first);
  return out;
}

void find_peak(DeviceMemory& d, const std::vector<const MemorySample*>& samples) {
  size_t peak = 0;
  for (size_t k = 0; k < samples.size(); ++k) {
    if (samples[k]->total_allocated > samples[peak]->total_allocated) peak = k;
    d.max_reserved = std::max(d.max_reserved, samples[k]->total_reserved);
    int64_t gap = samples[k]->total_reserved - samples[k]->total_allocated;
    if (k == 0 || gap > d.max_gap) {
      d.max_gap = gap;
      d.max_gap_ts_ns = samples[k]->ts_ns;
    }
    d.timeline.push_back(
        {samples[k]->ts_ns, samples[k]->total_allocated, samples[k]->total_reserved});
  }
  d.peak_allocated = samples[peak]->total_allocated;
  d.reserved_at_peak = samples[peak]->total_reserved;
  d.peak_ts_ns = samples[peak]->ts_ns;
  d.peak_uid = samples[peak]->uid;
}

// Pairs frees with allocations by address; takes the live set after the
// peak sample and after the last one.
void replay(DeviceMemory& d, const std::vector<const MemorySample*>& samples,
            const std::unordered_map<Uid, Allocation>& made) {
  std::map<uint64_t, const Allocation*> live;
  for (const MemorySample* s : samples) {
    if (s->bytes > 0) {
      ++d.allocations;
      live[s->addr] = &made.at(s->uid);
    } else if (s->bytes < 0) {
      ++d.frees;
      if (live.erase(s->addr) == 0) {
        ++d.unknown_frees;
        d.unknown_freed_bytes -= s->bytes;
      }
    }
    if (s->uid == d.peak_uid) d.live_at_peak = live_list(live);
  }
  d.never_freed = live_list(live);
  for (const Allocation& a : d.live_at_peak) d.tracked_at_peak += a.bytes;
  d.untracked_at_peak = d.peak_allocated - d.tracked_at_peak;
  std::string first_step = d.steps.empty() ? std::string() : d.steps.front().name;
  for (const Allocation& a : d.never_freed) {
    d.never_freed_bytes += a.bytes;
    if (!a.step.empty() && a.step != first_step) d.never_freed_after_first_step_bytes += a.bytes;
  }
}

void group_by_op(DeviceMemory& d, const std::vector<const MemorySample*>& samples,
                 const std::unordered_map<Uid, Allocation>& made) {
  std::map<std::pair<std::string, std::string>, OpGroup> groups;
  auto group_of = [&](const Allocation& a) -> OpGroup& {
    OpGroup& g = groups[{a.op, a.module}];
    g.op = a.op;
    g.module = a.module;
    return g;
  };
  for (const MemorySample* s : samples) {
    if (s->bytes <= 0) continue;
    OpGroup& g = group_of(made.at(s->uid));
    ++g.allocations;
    g.allocated_bytes += s->bytes;
  }
  for (const Allocation& a : d.live_at_peak) {  // largest first: the first sets the example
    OpGroup& g = group_of(a);
    if (g.at_peak++ == 0) g.largest_at_peak_op = a.op_uid;
    g.at_peak_bytes += a.bytes;
  }
  for (const Allocation& a : d.never_freed) {
    OpGroup& g = group_of(a);
    ++g.never_freed;
    g.never_freed_bytes += a.bytes;
  }
  for (auto& [key, g] : groups) d.by_op.push_back(std::move(g));
  std::stable_sort(d.by_op.begin(), d.by_op.end(), [](const OpGroup& a, const OpGroup& b) {
    if (a.at_peak_bytes != b.at_peak_bytes) return a.at_peak_bytes > b.at_peak_bytes;
    if (a.never_freed_bytes != b.never_freed_bytes)
      return a.never_freed_bytes > b.never_freed_bytes;
    return a.allocated_bytes > b.allocated_bytes;
  });
}

DeviceMemory analyse_device(const std::vector<const MemorySample*>& samples,
                            const std::vector<StepSpan>& steps,
                            const std::unordered_map<Uid, Allocation>& made) {
  DeviceMemory d;
  d.device_type = samples.front()->device_type;
  d.device_id = samples.front()->device_id;
  d.device = memory_device_name(d.device_type, d.device_id);
  d.samples = samples.size();
  find_peak(d, samples);
  d.peak_step = step_at(steps, d.peak_ts_ns);
  add_steps(d, steps, samples);
  replay(d, samples, made);
  group_by_op(d, samples, made);
  return d;
}

}  // namespace

const DeviceMemory* MemoryAnalysis::find(const std::string& name) const {
  for (const DeviceMemory& d : devices)
    if (d.device == name) return &d;
  return nullptr;
}

namespace {

MemoryAnalysis analyse_samples(const Trace& trace, const std::vector<MemorySample>& samples) {
  std::vector<StepSpan> steps = profiler_steps(trace);
  std::unordered_map<Uid, Allocation> made = attribute_allocations(trace, samples);
  for (auto& [uid, a] : made) a.step = step_at(steps, a.ts_ns);

  std::map<std::pair<int32_t, int32_t>, std::vector<const MemorySample*>> by_device;
  for (const MemorySample& s : samples) by_device[{s.device_type, s.device_id}].push_back(&s);
  MemoryAnalysis out;
  for (const auto& [key, list] : by_device)
    out.devices.push_back(analyse_device(list, steps, made));
  std::stable_sort(out.devices.begin(), out.devices.end(),
                   [](const DeviceMemory& a, const DeviceMemory& b) {
                     if (a.is_gpu() != b.is_gpu()) return a.is_gpu();
                     return a.peak_allocated > b.peak_allocated;
                   });
  out.findings = memory_findings(out);
  return out;
}

}  // namespace

MemoryAnalysis analyse_memory(const Trace& trace) {
  std::vector<MemorySample> samples = memory_samples(trace);
  if (samples.empty() && xplane::is_xplane_trace(trace))
    throw TraceError(fmt::format("{}: a JAX / XLA XPlane trace: it has no allocator samples "
                                 "([memory] events) — XProf's memory profile is a separate tool "
                                 "output that jarvis does not read; `jarvis memory` analyses "
                                 "PyTorch traces recorded with profile_memory=True",
                                 trace.path.empty() ? std::string("trace") : trace.path),
                     ErrorKind::Unsupported);
  if (samples.empty() && nsys::is_nsys_trace(trace))
    throw TraceError(
        fmt::format("{}: an Nsight Systems export has no allocator samples (the PyTorch "
                    "profiler's [memory] events; nsys's --cuda-memory-usage tables are not read). "
                    "Record the run with torch.profiler.profile(profile_memory=True, "
                    "record_shapes=True, with_stack=True) to analyse memory.",
                    trace.path.empty() ? std::string("trace") : trace.path),
        ErrorKind::Unsupported);
  if (samples.empty())
    throw TraceError(fmt::format("{}: the trace has no [memory] events: it was recorded without "
                                 "profile_memory=True. Record it again with "
                                 "torch.profiler.profile(profile_memory=True, record_shapes=True, "
                                 "with_stack=True) to analyse memory.",
                                 trace.path.empty() ? std::string("trace") : trace.path),
                     ErrorKind::Unsupported);
  return analyse_samples(trace, samples);
}

std::optional<MemoryAnalysis> analyse_memory_if_recorded(const Trace& trace) {
  std::vector<MemorySample> samples = memory_samples(trace);
  if (samples.empty()) return std::nullopt;
  return analyse_samples(trace, samples);
}

std::shared_ptr<const MemoryAnalysis> trace_memory(const LoadedTrace& entry) {
  return entry.cached<MemoryAnalysis>("memory", [&entry] { return analyse_memory(entry.trace()); });
}

std::vector<TimelinePoint> downsample(const std::vector<TimelinePoint>& timeline,
                                      size_t max_points) {
  if (timeline.size() <= max_points || max_points < 3) return timeline;
  // The first and last points are kept; the rest go in equal runs.
  size_t runs = max_points - 2;
  size_t inner = timeline.size() - 2;
  std::vector<TimelinePoint> out{timeline.front()};
  for (size_t r = 0; r < runs; ++r) {
    size_t begin = 1 + r * inner / runs, end = 1 + (r + 1) * inner / runs;
    if (begin == end) continue;
    auto top = std::max_element(
        timeline.begin() + static_cast<std::ptrdiff_t>(begin),
        timeline.begin() + static_cast<std::ptrdiff_t>(end),
        [](const TimelinePoint& a, const TimelinePoint& b) { return a.allocated < b.allocated; });
    out.push_back(*top);
  }
  out.push_back(timeline.back());
  return out;
}

}  // namespace jarvis::memory
