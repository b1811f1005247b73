// Per-kernel comm/compute overlap: how long each compute kernel ran while a
// collective kernel ran on another stream of the same device.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "collectives/collectives.h"
#include "report/core_tables.h"
#include "report/gpu_timeline.h"

namespace jarvis::collectives {
namespace {

struct DeviceCollectives {
  std::vector<const TimelineKernel*> by_start;  // sorted by ts
  double longest = 0;                           // bounds the backward search
};

KernelOverlap overlap_of(const TimelineKernel& k, const DeviceCollectives& dc) {
  KernelOverlap o;
  o.uid = k.uid;
  o.dur_us = k.dur;
  const double k_end = k.ts + k.dur;
  // Any collective starting before k.ts - longest ends before k starts.
  auto first = std::lower_bound(dc.by_start.begin(), dc.by_start.end(), k.ts - dc.longest,
                                [](const TimelineKernel* c, double t) { return c->ts < t; });
  std::vector<Interval> clipped;
  for (auto it = first; it != dc.by_start.end() && (*it)->ts < k_end; ++it) {
    const TimelineKernel& c = **it;
    if (c.stream == k.stream) continue;
    // Relative to the kernel's start: timestamps near 1e12 us carry ~1 ns
    // rounding, differences of nearby timestamps are exact.
    const double rel = c.ts - k.ts;
    const double s = std::max(0.0, rel), e = std::min(k.dur, rel + c.dur);
    if (e <= s) continue;
    clipped.emplace_back(s, e);
    o.collectives.push_back(c.uid);
  }
  o.overlapped_us = intervals_length(merge_intervals(std::move(clipped)));
  return o;
}

std::string_view launcher_category(const Trace& trace, const CallTree& tree, Uid launcher) {
  return launcher == kNoUid ? std::string_view("<no launcher>")
                            : report::op_category_of(trace, tree, launcher);
}

struct OverlapSums {
  size_t kernels = 0;
  double kernel_us = 0;
  double overlapped_us = 0;
  std::vector<std::string> names;  // distinct, first met
};

void add_to(OverlapSums& sums, const Trace& trace, const KernelOverlap& o) {
  ++sums.kernels;
  sums.kernel_us += o.dur_us;
  sums.overlapped_us += o.overlapped_us;
  for (const std::string& n : overlapping_collective_names(trace, o))
    if (std::find(sums.names.begin(), sums.names.end(), n) == sums.names.end())
      sums.names.push_back(n);
}

double percent(double part, double whole) {
  return whole > 0 ? part / whole * 100.0 : 0.0;
}

}  // namespace

std::vector<KernelOverlap> compute_overlap(const std::vector<TimelineKernel>& kernels) {
  std::map<int64_t, DeviceCollectives> per_device;
  for (const TimelineKernel& k : kernels) {
    if (!k.is_collective) continue;
    DeviceCollectives& dc = per_device[k.device];
    dc.by_start.push_back(&k);
    dc.longest = std::max(dc.longest, k.dur);
  }
  for (auto& [device, dc] : per_device)
    std::stable_sort(
        dc.by_start.begin(), dc.by_start.end(),
        [](const TimelineKernel* a, const TimelineKernel* b) { return a->ts < b->ts; });
  std::vector<KernelOverlap> out;
  static const DeviceCollectives none;
  for (const TimelineKernel& k : kernels) {
    if (k.is_collective) continue;
    auto it = per_device.find(k.device);
    out.push_back(overlap_of(k, it == per_device.end() ? none : it->second));
  }
  return out;
}

std::vector<TimelineKernel> timeline_kernels(const Trace& trace) {
  std::vector<TimelineKernel> out;
  for (size_t u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (e.cat != Cat::Kernel || !e.has_ts() || !e.has_dur()) continue;
    const Uid uid = static_cast<Uid>(u);
    TimelineKernel k;
    k.uid = uid;
    k.ts = e.ts();
    k.dur = e.dur();
    k.stream = trace.stream(e);
    // Kineto puts each GPU in its own pid; args.device names it too.
    k.device = trace.device(e) != kNoInt ? trace.device(e) : trace.pid(e).value;
    k.is_collective = trace.is_communication(uid);
    out.push_back(k);
  }
  return out;
}

std::vector<KernelOverlap> kernel_overlap(const Trace& trace) {
  return compute_overlap(timeline_kernels(trace));
}

std::vector<std::string> overlapping_collective_names(const Trace& trace,
                                                      const KernelOverlap& overlap) {
  std::vector<std::string> names;
  for (Uid c : overlap.collectives) {
    std::string n(trace.name(c));
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(std::move(n));
  }
  return names;
}

Table overlap_by_op_table(const Trace& trace, const CallTree& tree,
                          const std::vector<KernelOverlap>& overlaps) {
  std::map<std::pair<std::string, std::string>, OverlapSums> by_op;
  for (const KernelOverlap& o : overlaps) {
    const Uid launcher = tree.launcher(o.uid);
    std::string name = launcher == kNoUid ? "<no launcher>" : std::string(trace.name(launcher));
    std::string category(launcher_category(trace, tree, launcher));
    add_to(by_op[{category, name}], trace, o);
  }
  std::vector<std::pair<const std::pair<std::string, std::string>*, const OverlapSums*>> rows;
  for (const auto& [key, sums] : by_op) rows.emplace_back(&key, &sums);
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second->overlapped_us > b.second->overlapped_us;
  });
  Table t("collective_overlap_by_op", {"op category", "name", "kernel_count", "kernel_time_us",
                                       "overlapped_us", "overlapped_percent", "collectives"});
  for (const auto& [key, sums] : rows) {
    auto& row = t.add_row();
    row[0] = Cell(key->first);
    row[1] = Cell(key->second);
    row[2] = Cell(sums->kernels);
    row[3] = Cell(sums->kernel_us);
    row[4] = Cell(sums->overlapped_us);
    row[5] = Cell(percent(sums->overlapped_us, sums->kernel_us));
    row[6] = Cell(fmt::format("{}", fmt::join(sums->names, "; ")));
  }
  return t;
}

Table overlap_by_category_table(const Trace& trace, const CallTree& tree,
                                const std::vector<KernelOverlap>& overlaps) {
  std::map<std::string, OverlapSums> by_category;
  for (const KernelOverlap& o : overlaps)
    add_to(by_category[std::string(launcher_category(trace, tree, tree.launcher(o.uid)))], trace,
           o);
  Table t("collective_overlap_by_category",
          {"op category", "kernel_count", "kernel_time_us", "overlapped_us", "overlapped_percent"});
  for (const auto& [category, sums] : by_category) {
    auto& row = t.add_row();
    row[0] = Cell(category);
    row[1] = Cell(sums.kernels);
    row[2] = Cell(sums.kernel_us);
    row[3] = Cell(sums.overlapped_us);
    row[4] = Cell(percent(sums.overlapped_us, sums.kernel_us));
  }
  return t;
}

}  // namespace jarvis::collectives
