// memory_summary: the bounded JSON and the few lines of text of one trace.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "memory/memory_internal.h"

namespace jarvis::memory {
namespace {

using json = nlohmann::json;

json uid_or_null(Uid uid) {
  return uid == kNoUid ? json() : json(uid);
}

json point_json(const TimelinePoint& p) {
  return {{"ts_us", ns_to_us(p.ts_ns)},
          {"allocated_bytes", p.allocated},
          {"reserved_bytes", p.reserved}};
}

json device_row(const DeviceMemory& d) {
  return {{"device", d.device},
          {"samples", d.samples},
          {"allocations", d.allocations},
          {"frees", d.frees},
          {"peak_allocated_bytes", d.peak_allocated},
          {"peak_ts_us", ns_to_us(d.peak_ts_ns)},
          {"reserved_at_peak_bytes", d.reserved_at_peak},
          {"max_reserved_bytes", d.max_reserved},
          {"max_reserved_minus_allocated_bytes", d.max_gap},
          {"max_reserved_minus_allocated_ts_us", ns_to_us(d.max_gap_ts_ns)},
          {"final_allocated_bytes", d.timeline.back().allocated}};
}

json peak_json(const DeviceMemory& d) {
  return {{"ts_us", ns_to_us(d.peak_ts_ns)},
          {"uid", d.peak_uid},
          {"step", text_or_null(d.peak_step)},
          {"allocated_bytes", d.peak_allocated},
          {"reserved_bytes", d.reserved_at_peak},
          {"reserved_minus_allocated_bytes", d.reserved_at_peak - d.peak_allocated},
          {"live_allocations", d.live_at_peak.size()},
          {"tracked_bytes", d.tracked_at_peak},
          {"untracked_bytes", d.untracked_at_peak}};
}

json step_json(const StepMemory& s) {
  return {{"step", s.name},
          {"start_us", ns_to_us(s.start_ns)},
          {"end_us", ns_to_us(s.end_ns)},
          {"samples", s.samples},
          {"allocated_at_start_bytes", s.allocated_at_start},
          {"allocated_at_end_bytes", s.allocated_at_end},
          {"growth_bytes", s.growth()},
          {"peak_allocated_bytes", s.peak_allocated},
          {"peak_reserved_bytes", s.peak_reserved},
          {"peak_ts_us", ns_to_us(s.peak_ts_ns)}};
}

json group_at_peak_json(const OpGroup& g, int64_t peak) {
  return {{"op", g.op},
          {"module", text_or_null(g.module)},
          {"count", g.at_peak},
          {"bytes", g.at_peak_bytes},
          {"share_of_peak", peak > 0 ? double(g.at_peak_bytes) / double(peak) : 0.0},
          {"op_uid", uid_or_null(g.largest_at_peak_op)}};
}

json allocation_json(const Allocation& a) {
  return {{"uid", a.uid},
          {"ts_us", ns_to_us(a.ts_ns)},
          {"bytes", a.bytes},
          {"op", a.op},
          {"op_uid", uid_or_null(a.op_uid)},
          {"module_path", text_or_null(a.module_path)},
          {"python_frame", text_or_null(a.python_frame)},
          {"step", text_or_null(a.step)}};
}

json leaks_json(const DeviceMemory& d) {
  return {{"never_freed_bytes", d.never_freed_bytes},
          {"never_freed_count", d.never_freed.size()},
          {"never_freed_after_first_step_bytes", d.never_freed_after_first_step_bytes},
          {"frees_of_unknown_addresses", d.unknown_frees},
          {"unknown_freed_bytes", d.unknown_freed_bytes},
          {"growth_per_step_bytes", d.growth_per_step},
          {"grows_every_step", d.grows_every_step}};
}

json finding_json(const MemoryFinding& f) {
  return {{"rule", f.rule},
          {"device", f.device},
          {"title", f.title},
          {"evidence", f.evidence},
          {"action", f.action}};
}

const DeviceMemory& pick_device(const MemoryAnalysis& analysis, const std::string& name) {
  if (name.empty()) return analysis.primary();
  if (const DeviceMemory* d = analysis.find(name)) return *d;
  std::string names;
  for (const DeviceMemory& d : analysis.devices) names += (names.empty() ? "" : ", ") + d.device;
  throw std::invalid_argument(
      fmt::format("the trace has no memory samples of device '{}'; it has: {}", name, names));
}

std::string peak_line(const DeviceMemory& d) {
  return fmt::format(
      "{}: peak {} allocated ({} reserved) at {:.3f} us{}; {} of it allocated "
      "before the trace",
      d.device, format_bytes(d.peak_allocated), format_bytes(d.reserved_at_peak),
      ns_to_us(d.peak_ts_ns), d.peak_step.empty() ? "" : " in " + d.peak_step,
      format_bytes(d.untracked_at_peak));
}

}  // namespace

json memory_summary_json(const MemoryAnalysis& analysis, const SummaryOptions& options) {
  const DeviceMemory& d = pick_device(analysis, options.device);
  size_t rows = options.max_rows;
  json devices = json::array();
  for (const DeviceMemory& other : analysis.devices) devices.push_back(device_row(other));
  json timeline = json::array();
  for (const TimelinePoint& p : downsample(d.timeline, options.timeline_points))
    timeline.push_back(point_json(p));
  json steps = json::array();
  for (const StepMemory& s : d.steps) steps.push_back(step_json(s));
  json at_peak = json::array(), never_freed = json::array(), top = json::array();
  for (const OpGroup& g : d.by_op) {
    if (g.at_peak_bytes > 0) at_peak.push_back(group_at_peak_json(g, d.peak_allocated));
  }
  std::vector<const OpGroup*> leaking;
  for (const OpGroup& g : d.by_op)
    if (g.never_freed > 0) leaking.push_back(&g);
  std::stable_sort(leaking.begin(), leaking.end(), [](const OpGroup* a, const OpGroup* b) {
    return a->never_freed_bytes > b->never_freed_bytes;
  });
  for (const OpGroup* g : leaking)
    never_freed.push_back({{"op", g->op},
                           {"module", text_or_null(g->module)},
                           {"count", g->never_freed},
                           {"bytes", g->never_freed_bytes}});
  for (size_t k = 0; k < d.live_at_peak.size() && k < rows; ++k)
    top.push_back(allocation_json(d.live_at_peak[k]));
  json findings = json::array();
  for (const MemoryFinding& f : analysis.findings) findings.push_back(finding_json(f));
  return {{"summary", peak_line(d)},    {"device", d.device},     {"devices", devices},
          {"peak", peak_json(d)},       {"timeline", timeline},   {"steps", steps},
          {"at_peak", at_peak},         {"top_allocations", top}, {"leaks", leaks_json(d)},
          {"never_freed", never_freed}, {"findings", findings}};
}

std::string memory_summary_text(const MemoryAnalysis& analysis, const std::string& device) {
  const DeviceMemory& d = pick_device(analysis, device);
  std::string out = peak_line(d) + "\n";
  size_t shown = 0;
  for (const OpGroup& g : d.by_op) {
    if (g.at_peak_bytes <= 0 || shown++ == 5) break;
    out += fmt::format(
        "  {:>10}  {:5.1f}%  {} ({} allocation{})\n", format_bytes(g.at_peak_bytes),
        100.0 * double(g.at_peak_bytes) / double(std::max<int64_t>(d.peak_allocated, 1)),
        group_label(g.op, g.module), g.at_peak, g.at_peak == 1 ? "" : "s");
  }
  out += fmt::format("never freed within the trace: {} in {} allocations",
                     format_bytes(d.never_freed_bytes), d.never_freed.size());
  if (!d.steps.empty())
    out += fmt::format("; {} step{}, median growth {} per step", d.steps.size(),
                       d.steps.size() == 1 ? "" : "s", format_bytes(d.growth_per_step));
  out += "\n";
  // A few lines whatever the trace holds: the rest is in the structured
  // result (its findings and devices lists).
  constexpr size_t kTextLines = 5;
  size_t findings = 0, others = 0;
  for (const MemoryFinding& f : analysis.findings)
    if (findings++ < kTextLines) out += fmt::format("[{}] {}\n", f.rule, f.title);
  if (findings > kTextLines)
    out += fmt::format("... and {} more findings\n", findings - kTextLines);
  for (const DeviceMemory& other : analysis.devices)
    if (&other != &d && others++ < kTextLines) out += "also " + peak_line(other) + "\n";
  if (others > kTextLines) out += fmt::format("... and {} more devices\n", others - kTextLines);
  return out;
}

}  // namespace jarvis::memory
