#include "xplane/report.h"

#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>

#include "base/text_match.h"
#include "xplane/kernel_summary.h"
#include "xplane/perf_sheets.h"

namespace jarvis::xplane {

namespace {

struct Buckets {
  std::vector<Interval> all, comp, comm, memcpy;
};

}  // namespace

std::vector<int64_t> python_set_order(const std::vector<int64_t>& values) {
  // CPython setobject.c: 8 slots to start; after an insert that makes
  // fill*5 >= mask*3 the table is rebuilt with used*4 slots (rounded up to
  // a power of two), re-inserting in slot order. Probing here is linear,
  // which is what CPython's LINEAR_PROBES does for the first 9 slots.
  std::vector<int64_t> table(8, -1);
  size_t used = 0;
  auto insert = [](std::vector<int64_t>& t, int64_t v) {
    size_t mask = t.size() - 1;
    size_t i = static_cast<size_t>(v) & mask;
    while (t[i] != -1) {
      if (t[i] == v) return false;
      i = (i + 1) & mask;
    }
    t[i] = v;
    return true;
  };
  for (int64_t v : values) {
    if (v < 0) continue;
    if (!insert(table, v)) continue;
    ++used;
    if (used * 5 >= (table.size() - 1) * 3) {
      size_t size = 8;
      while (size <= used * 4) size <<= 1;
      std::vector<int64_t> grown(size, -1);
      for (int64_t old : table)
        if (old != -1) insert(grown, old);
      table = std::move(grown);
    }
  }
  std::vector<int64_t> order;
  for (int64_t v : table)
    if (v != -1) order.push_back(v);
  return order;
}

std::vector<DeviceTimeline> device_timelines(const Trace& trace) {
  std::map<int64_t, Buckets> by_pid;
  std::vector<int64_t> pid_sequence;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (!e.is_gpu() || !e.has_ts() || !e.has_dur()) continue;
    const ProcId& pid = trace.pid(e);
    if (pid.is_string || !pid.present()) continue;
    if (trace.thread_name(pid, trace.tid(e)).rfind("Stream #", 0) != 0) continue;
    Interval iv{e.ts(), e.end()};
    Buckets& b = by_pid[pid.value];
    pid_sequence.push_back(pid.value);
    b.all.push_back(iv);
    std::string_view name = trace.name(u);
    if (starts_with_ci(name, "copy") || starts_with_ci(name, "memcpy") ||
        starts_with_ci(name, "memset"))
      b.memcpy.push_back(iv);
    else if (trace.is_communication(u))
      b.comm.push_back(iv);
    else
      b.comp.push_back(iv);
  }
  if (by_pid.empty())
    throw TraceError(
        fmt::format("{}: no GPU events on a \"Stream #\" line of a /device:GPU plane", trace.path),
        ErrorKind::Unsupported);
  std::vector<DeviceTimeline> out;
  for (int64_t pid : python_set_order(pid_sequence)) {
    Buckets& b = by_pid[pid];
    out.push_back({pid, gpu_timeline_of(std::move(b.all), std::move(b.comp), std::move(b.comm),
                                        std::move(b.memcpy))});
  }
  return out;
}

GpuTimeline average_timeline(const std::vector<DeviceTimeline>& devices) {
  GpuTimeline avg;
  for (const DeviceTimeline& d : devices) {
    const GpuTimeline& t = d.timeline;
    avg.computation_time += t.computation_time;
    avg.exposed_comm_time += t.exposed_comm_time;
    avg.exposed_memcpy_time += t.exposed_memcpy_time;
    avg.busy_time += t.busy_time;
    avg.idle_time += t.idle_time;
    avg.total_time += t.total_time;
    avg.total_comm_time += t.total_comm_time;
    avg.total_memcpy_time += t.total_memcpy_time;
    avg.event_count += t.event_count;
  }
  if (devices.empty()) return avg;
  const auto n = static_cast<double>(devices.size());
  for (double* v :
       {&avg.computation_time, &avg.exposed_comm_time, &avg.exposed_memcpy_time, &avg.busy_time,
        &avg.idle_time, &avg.total_time, &avg.total_comm_time, &avg.total_memcpy_time})
    *v /= n;
  return avg;
}

Table gpu_timeline_by_device_table(const std::vector<DeviceTimeline>& devices) {
  Table table("gpu_timeline", {"type", "time ms", "percent", "gpu_pid"});
  for (const DeviceTimeline& d : devices) {
    const Table one = gpu_timeline_table(d.timeline);
    for (const auto& cells : one.rows) {
      auto& row = table.add_row();  // four missing cells, filled in place
      for (size_t c = 0; c < cells.size(); ++c) row[c] = cells[c];
      row[3] = Cell(d.gpu_pid);
    }
  }
  return table;
}

Table gpu_events_averages_table(const GpuTimeline& average) {
  Table table = gpu_timeline_table(average);
  table.name = "gpu_events_averages";
  return table;
}

std::vector<Table> jax_report_tables(const Trace& trace) {
  std::vector<Table> out;
  auto devices = device_timelines(trace);
  out.push_back(gpu_timeline_by_device_table(devices));
  out.push_back(gpu_events_averages_table(average_timeline(devices)));
  auto kernels = kernel_launches(trace);
  out.push_back(kernel_launchers_summary_table(kernels));
  out.push_back(kernel_launchers_summary_by_category_table(kernels));
  out.push_back(xla_summary_table(kernels));
  for (Table& t : hlo_sheets(jax_kernels(trace))) out.push_back(std::move(t));
  return out;
}

}  // namespace jarvis::xplane
