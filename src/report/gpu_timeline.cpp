#include "report/gpu_timeline.h"

#include <algorithm>

#include "base/sort_runs.h"

namespace jarvis {

std::vector<Interval> merge_intervals(std::vector<Interval> intervals) {
  if (intervals.empty()) return {};
  stable_sort_runs(intervals,
                   [](const Interval& a, const Interval& b) { return a.first < b.first; });
  std::vector<Interval> merged{intervals[0]};
  for (size_t k = 1; k < intervals.size(); ++k) {
    auto& last = merged.back();
    if (intervals[k].first <= last.second)
      last.second = std::max(last.second, intervals[k].second);
    else
      merged.push_back(intervals[k]);
  }
  return merged;
}

std::vector<Interval> subtract_intervals(const std::vector<Interval>& a,
                                         const std::vector<Interval>& b) {
  std::vector<Interval> result;
  size_t ai = 0;
  for (auto [b_start, b_end] : b) {
    double current = b_start;
    while (ai < a.size() && a[ai].second <= b_start) ++ai;
    for (size_t k = ai; k < a.size() && a[k].first < b_end; ++k) {
      if (a[k].first > current) result.emplace_back(current, std::min(b_end, a[k].first));
      current = std::max(current, a[k].second);
      if (current >= b_end) break;
    }
    if (current < b_end) result.emplace_back(current, b_end);
  }
  return result;
}

double intervals_length(const std::vector<Interval>& intervals) {
  double total = 0.0;
  for (auto [s, e] : intervals) total += e - s;
  return total;
}

GpuTimeline gpu_timeline_of(std::vector<Interval> all, std::vector<Interval> comp,
                            std::vector<Interval> comm, std::vector<Interval> memcpy) {
  if (all.empty()) throw std::runtime_error("No GPU events found in the trace");
  GpuTimeline t;
  t.event_count = all.size();
  auto comp_u = merge_intervals(std::move(comp));
  auto comm_u = merge_intervals(std::move(comm));
  auto memcpy_u = merge_intervals(std::move(memcpy));
  auto all_u = merge_intervals(std::move(all));
  t.total_time = all_u.back().second - all_u.front().first;
  t.computation_time = intervals_length(comp_u);
  t.total_comm_time = intervals_length(comm_u);
  t.exposed_comm_time = intervals_length(subtract_intervals(comp_u, comm_u));
  t.total_memcpy_time = intervals_length(memcpy_u);
  t.exposed_memcpy_time =
      intervals_length(subtract_intervals(comm_u, subtract_intervals(comp_u, memcpy_u)));
  t.busy_time = intervals_length(all_u);
  t.idle_time = t.total_time - t.busy_time;
  return t;
}

GpuTimeline compute_gpu_timeline(const Trace& trace, const CallTree& tree, bool include_unlinked) {
  std::vector<Interval> all, comp, comm, memcpy;
  for (Uid u : tree.gpu_event_uids()) {
    const Event& e = trace.events[u];
    if (!include_unlinked && !tree.in_tree(u)) continue;
    if (!e.has_ts() || !e.has_dur()) continue;
    Interval iv{e.ts(), e.end()};
    all.push_back(iv);
    const uint8_t flags = trace.name_flags(u);
    if (e.cat == Cat::GpuMemcpy)
      memcpy.push_back(iv);
    else if (e.cat == Cat::Kernel && (flags & kNameRocmLegacyMemcpy))
      memcpy.push_back(iv);
    else if (e.cat == Cat::Kernel && (flags & kNameRocmLegacyMemset))
      comp.push_back(iv);
    else if (flags & kNameCommunication)
      comm.push_back(iv);
    else
      comp.push_back(iv);
  }
  if (all.empty()) throw std::runtime_error("No GPU events found in the trace");
  return gpu_timeline_of(std::move(all), std::move(comp), std::move(comm), std::move(memcpy));
}

Table gpu_timeline_table(const GpuTimeline& t) {
  Table table("gpu_timeline", {"type", "time ms", "percent"});
  const std::pair<const char*, double> rows[] = {
      {"computation_time", t.computation_time},
      {"exposed_comm_time", t.exposed_comm_time},
      {"exposed_memcpy_time", t.exposed_memcpy_time},
      {"busy_time", t.busy_time},
      {"idle_time", t.idle_time},
      {"total_time", t.total_time},
      {"total_comm_time", t.total_comm_time},
      {"total_memcpy_time", t.total_memcpy_time},
  };
  for (auto [type, us] : rows) {
    auto& row = table.add_row();
    row[0] = Cell(type);
    row[1] = Cell(us / 1e3);
    row[2] = Cell(us / t.total_time * 100);
  }
  return table;
}

}  // namespace jarvis
