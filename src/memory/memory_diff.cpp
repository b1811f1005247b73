// Two runs of one model: how their peaks, steps and holders at the peak moved.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <utility>

#include "memory/memory_internal.h"

namespace jarvis::memory {
namespace {

using json = nlohmann::json;

RunPeak run_peak(const DeviceMemory& d) {
  RunPeak r;
  r.peak_allocated = d.peak_allocated;
  r.reserved_at_peak = d.reserved_at_peak;
  r.max_reserved = d.max_reserved;
  r.never_freed_bytes = d.never_freed_bytes;
  r.steps = d.steps.size();
  std::vector<int64_t> peaks;
  for (const StepMemory& s : d.steps) peaks.push_back(s.peak_allocated);
  std::sort(peaks.begin(), peaks.end());
  r.median_step_peak = peaks.empty() ? 0 : peaks[peaks.size() / 2];
  return r;
}

// Devices of the two runs paired, in the reference's order (GPU first): same
// name first, else the next unpaired target device of the same kind (an H100
// run's cuda:0 with an MI300 run's hip:0).
std::vector<std::pair<const DeviceMemory*, const DeviceMemory*>> pair_devices(
    const MemoryAnalysis& reference, const MemoryAnalysis& target) {
  std::vector<const DeviceMemory*> unnamed;  // target devices no reference device names
  for (const DeviceMemory& t : target.devices)
    if (!reference.find(t.device)) unnamed.push_back(&t);
  std::vector<std::pair<const DeviceMemory*, const DeviceMemory*>> pairs;
  for (const DeviceMemory& r : reference.devices) {
    if (const DeviceMemory* t = target.find(r.device)) {
      pairs.emplace_back(&r, t);
      continue;
    }
    auto t = std::find_if(unnamed.begin(), unnamed.end(),
                          [&](const DeviceMemory* c) { return c->is_gpu() == r.is_gpu(); });
    if (t == unnamed.end()) continue;
    pairs.emplace_back(&r, *t);
    unnamed.erase(t);
  }
  return pairs;
}

void add_group_diffs(const DeviceMemory& r, const DeviceMemory& t, std::vector<GroupDiff>& out) {
  std::map<std::pair<std::string, std::string>, GroupDiff> groups;
  auto at = [&](const OpGroup& g) -> GroupDiff& {
    GroupDiff& d = groups[{g.op, g.module}];
    d.device = t.device;
    d.op = g.op;
    d.module = g.module;
    return d;
  };
  for (const OpGroup& g : r.by_op) {
    GroupDiff& d = at(g);
    d.reference_at_peak_bytes = g.at_peak_bytes;
    d.reference_never_freed_bytes = g.never_freed_bytes;
  }
  for (const OpGroup& g : t.by_op) {
    GroupDiff& d = at(g);
    d.target_at_peak_bytes = g.at_peak_bytes;
    d.target_never_freed_bytes = g.never_freed_bytes;
  }
  for (auto& [key, d] : groups)
    if (d.delta() != 0 || d.reference_never_freed_bytes != d.target_never_freed_bytes)
      out.push_back(std::move(d));
}

void add_step_diffs(const DeviceMemory& r, const DeviceMemory& t, std::vector<StepDiff>& out) {
  for (size_t k = 0; k < std::min(r.steps.size(), t.steps.size()); ++k)
    out.push_back({t.device, k, r.steps[k].name, t.steps[k].name, r.steps[k].peak_allocated,
                   t.steps[k].peak_allocated});
}

json run_json(const RunPeak& r) {
  return {
      {"peak_allocated_bytes", r.peak_allocated}, {"reserved_at_peak_bytes", r.reserved_at_peak},
      {"max_reserved_bytes", r.max_reserved},     {"median_step_peak_bytes", r.median_step_peak},
      {"never_freed_bytes", r.never_freed_bytes}, {"steps", r.steps}};
}

}  // namespace

MemoryDiff diff_memory(const MemoryAnalysis& reference, const MemoryAnalysis& target) {
  MemoryDiff diff;
  for (const auto& [r, t] : pair_devices(reference, target)) {
    diff.devices.push_back({r->device, t->device, run_peak(*r), run_peak(*t)});
    add_group_diffs(*r, *t, diff.groups);
    add_step_diffs(*r, *t, diff.steps);
  }
  std::stable_sort(diff.groups.begin(), diff.groups.end(),
                   [](const GroupDiff& a, const GroupDiff& b) {
                     return std::llabs(a.delta()) > std::llabs(b.delta());
                   });
  return diff;
}

json memory_diff_json(const MemoryDiff& diff, size_t max_rows) {
  json devices = json::array(), groups = json::array(), steps = json::array();
  for (const DeviceDiff& d : diff.devices) {
    double ratio = d.reference.peak_allocated > 0
                       ? double(d.target.peak_allocated) / double(d.reference.peak_allocated)
                       : 0.0;
    devices.push_back({{"reference_device", d.reference_device},
                       {"target_device", d.target_device},
                       {"reference", run_json(d.reference)},
                       {"target", run_json(d.target)},
                       {"peak_delta_bytes", d.peak_delta()},
                       {"peak_ratio", ratio}});
  }
  for (size_t k = 0; k < diff.groups.size() && k < max_rows; ++k) {
    const GroupDiff& g = diff.groups[k];
    groups.push_back({{"device", g.device},
                      {"op", g.op},
                      {"module", text_or_null(g.module)},
                      {"reference_at_peak_bytes", g.reference_at_peak_bytes},
                      {"target_at_peak_bytes", g.target_at_peak_bytes},
                      {"delta_bytes", g.delta()},
                      {"reference_never_freed_bytes", g.reference_never_freed_bytes},
                      {"target_never_freed_bytes", g.target_never_freed_bytes}});
  }
  for (const StepDiff& s : diff.steps)
    steps.push_back({{"device", s.device},
                     {"index", s.index},
                     {"reference_step", s.reference_step},
                     {"target_step", s.target_step},
                     {"reference_peak_bytes", s.reference_peak},
                     {"target_peak_bytes", s.target_peak},
                     {"delta_bytes", s.target_peak - s.reference_peak}});
  return {{"summary", memory_diff_text(diff)},
          {"devices", devices},
          {"groups", groups},
          {"group_count", diff.groups.size()},
          {"steps", steps}};
}

std::string memory_diff_text(const MemoryDiff& diff) {
  if (diff.devices.empty()) return "the two runs share no device with memory samples";
  std::string out;
  for (const DeviceDiff& d : diff.devices) {
    std::string name = d.reference_device == d.target_device
                           ? d.target_device
                           : d.reference_device + " -> " + d.target_device;
    out += fmt::format("{}: peak {} -> {} ({}{})", name, format_bytes(d.reference.peak_allocated),
                       format_bytes(d.target.peak_allocated), d.peak_delta() >= 0 ? "+" : "",
                       format_bytes(d.peak_delta()));
    for (const GroupDiff& g : diff.groups)
      if (g.device == d.target_device && g.delta() != 0) {
        out += fmt::format("; most changed at the peak: {} ({}{})", group_label(g.op, g.module),
                           g.delta() >= 0 ? "+" : "", format_bytes(g.delta()));
        break;
      }
    out += "\n";
  }
  out.pop_back();
  return out;
}

}  // namespace jarvis::memory
