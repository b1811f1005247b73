// jarvis memory --out DIR: the timeline, the holders at the peak and the
// per-op table as CSV, the summary as JSON.
#include <fmt/format.h>

#include <filesystem>

#include "base/atomic_file.h"
#include "memory/memory_internal.h"
#include "report/table.h"

namespace jarvis::memory {
namespace {

// Text, so that a column with an empty cell stays integral (pandas would
// read and write a numeric column with a missing cell as floats).
Cell uid_cell(Uid uid) {
  return uid == kNoUid ? Cell(std::string()) : Cell(std::to_string(uid));
}

Table timeline_table(const MemoryAnalysis& analysis, size_t points) {
  Table t("memory_timeline", {"device", "ts_us", "allocated_bytes", "reserved_bytes"});
  for (const DeviceMemory& d : analysis.devices)
    for (const TimelinePoint& p : downsample(d.timeline, points))
      t.rows.push_back({d.device, ns_to_us(p.ts_ns), p.allocated, p.reserved});
  return t;
}

Table at_peak_table(const MemoryAnalysis& analysis) {
  Table t("memory_at_peak", {"device", "uid", "ts_us", "addr", "bytes", "op", "op_uid",
                             "module_path", "python_frame", "step"});
  for (const DeviceMemory& d : analysis.devices)
    for (const Allocation& a : d.live_at_peak)
      t.rows.push_back({d.device, a.uid, ns_to_us(a.ts_ns), fmt::format("0x{:x}", a.addr), a.bytes,
                        a.op, uid_cell(a.op_uid), a.module_path, a.python_frame, a.step});
  return t;
}

Table by_op_table(const MemoryAnalysis& analysis) {
  Table t("memory_by_op",
          {"device", "op", "module", "at_peak_count", "at_peak_bytes", "never_freed_count",
           "never_freed_bytes", "allocations", "allocated_bytes", "example_op_uid"});
  for (const DeviceMemory& d : analysis.devices)
    for (const OpGroup& g : d.by_op)
      t.rows.push_back({d.device, g.op, g.module, g.at_peak, g.at_peak_bytes, g.never_freed,
                        g.never_freed_bytes, g.allocations, g.allocated_bytes,
                        uid_cell(g.largest_at_peak_op)});
  return t;
}

}  // namespace

std::vector<std::string> write_memory_files(const MemoryAnalysis& analysis, const std::string& dir,
                                            size_t timeline_points) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> files;
  auto write = [&](const std::string& name, const std::string& text) {
    files.push_back(dir + "/" + name);
    write_file_atomic(files.back(), text);
  };
  write("memory_timeline.csv", timeline_table(analysis, timeline_points).to_csv());
  write("memory_at_peak.csv", at_peak_table(analysis).to_csv());
  write("memory_by_op.csv", by_op_table(analysis).to_csv());
  nlohmann::json all = nlohmann::json::array();
  for (const DeviceMemory& d : analysis.devices) {
    SummaryOptions options;
    options.device = d.device;
    all.push_back(memory_summary_json(analysis, options));
  }
  write("memory_summary.json", all.dump(1) + "\n");
  return files;
}

}  // namespace jarvis::memory
