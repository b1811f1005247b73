#include "charts/memory_page.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

namespace jarvis::charts {

namespace {

using memory::DeviceMemory;
using memory::format_bytes;

// "cuda:0" -> "cuda_0": file stems and section anchors allow [a-z0-9_-].
std::string device_id(const std::string& device) {
  std::string out;
  for (char c : device) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    out += ok ? c : (c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : '_');
  }
  return out;
}

std::string peak_sentence(const DeviceMemory& d) {
  return fmt::format(
      "Peak {} allocated ({} reserved) at {:.3f} µs{}; {} of it was allocated before the trace "
      "began (weights, buffers), {} by allocations the trace holds.",
      format_bytes(d.peak_allocated), format_bytes(d.reserved_at_peak), ns_to_us(d.peak_ts_ns),
      d.peak_step.empty() ? "" : " in " + d.peak_step, format_bytes(d.untracked_at_peak),
      format_bytes(d.tracked_at_peak));
}

std::string chart_caption(const DeviceMemory& d, size_t drawn) {
  std::string sampling =
      drawn < d.timeline.size()
          ? fmt::format(
                "{} of its {} samples drawn (per run of samples the one with the most "
                "allocated, so the peak is kept)",
                drawn, d.timeline.size())
          : fmt::format("all {} samples", d.timeline.size());
  return fmt::format(
      "Allocated and reserved bytes of {} after each allocator call, {}{}. The gap between the "
      "lines is memory the caching allocator holds but no tensor uses. {}",
      d.device, sampling, d.steps.empty() ? "" : "; shaded: ProfilerStep spans", peak_sentence(d));
}

Table devices_table(const memory::MemoryAnalysis& analysis) {
  Table t("memory_devices",
          {"device", "samples", "allocations", "frees", "peak", "peak_allocated_bytes",
           "reserved_at_peak_bytes", "peak_ts_us", "peak_step", "max_reserved_bytes",
           "max_reserved_minus_allocated_bytes", "never_freed_bytes", "growth_per_step_bytes"});
  for (const DeviceMemory& d : analysis.devices) {
    auto& row = t.add_row();
    row = {Cell(d.device),
           Cell(d.samples),
           Cell(d.allocations),
           Cell(d.frees),
           Cell(format_bytes(d.peak_allocated)),
           Cell(d.peak_allocated),
           Cell(d.reserved_at_peak),
           Cell(ns_to_us(d.peak_ts_ns)),
           Cell(d.peak_step),
           Cell(d.max_reserved),
           Cell(d.max_gap),
           Cell(d.never_freed_bytes),
           Cell(d.growth_per_step)};
  }
  return t;
}

Table holders_table(const MemoryTimelineChart& chart) {
  Table t("memory_at_peak_by_op",
          {"op", "module", "live at peak", "bytes", "size", "share of peak (%)"});
  for (const MemoryHolder& h : chart.holders) {
    auto bytes = static_cast<int64_t>(h.bytes);
    t.add_row() = {Cell(h.op),
                   Cell(h.module),
                   Cell(h.allocations),
                   Cell(bytes),
                   Cell(format_bytes(bytes)),
                   Cell(chart.peak_bytes > 0 ? 100.0 * h.bytes / chart.peak_bytes : 0.0)};
  }
  return t;
}

Table allocations_table(const std::vector<memory::Allocation>& list, size_t rows,
                        const std::string& name) {
  Table t(name,
          {"bytes", "size", "op", "module path", "python frame", "step", "allocated at (µs)"});
  for (size_t k = 0; k < list.size() && k < rows; ++k) {
    const memory::Allocation& a = list[k];
    t.add_row() = {Cell(a.bytes),          Cell(format_bytes(a.bytes)), Cell(a.op),
                   Cell(a.module_path),    Cell(a.python_frame),        Cell(a.step),
                   Cell(ns_to_us(a.ts_ns))};
  }
  return t;
}

Table leaks_table(const DeviceMemory& d) {
  std::vector<const memory::OpGroup*> leaking;
  for (const memory::OpGroup& g : d.by_op)
    if (g.never_freed > 0) leaking.push_back(&g);
  std::stable_sort(leaking.begin(), leaking.end(),
                   [](auto* a, auto* b) { return a->never_freed_bytes > b->never_freed_bytes; });
  Table t("memory_never_freed_by_op", {"op", "module", "never freed", "bytes", "size"});
  for (const memory::OpGroup* g : leaking)
    t.add_row() = {Cell(g->op), Cell(g->module), Cell(g->never_freed), Cell(g->never_freed_bytes),
                   Cell(format_bytes(g->never_freed_bytes))};
  return t;
}

Table steps_table(const DeviceMemory& d) {
  Table t("memory_steps",
          {"step", "start (µs)", "end (µs)", "allocated at start", "allocated at end", "growth",
           "growth_bytes", "peak allocated", "peak_allocated_bytes", "peak reserved"});
  for (const memory::StepMemory& s : d.steps)
    t.add_row() = {Cell(s.name),
                   Cell(ns_to_us(s.start_ns)),
                   Cell(ns_to_us(s.end_ns)),
                   Cell(format_bytes(s.allocated_at_start)),
                   Cell(format_bytes(s.allocated_at_end)),
                   Cell(format_bytes(s.growth())),
                   Cell(s.growth()),
                   Cell(format_bytes(s.peak_allocated)),
                   Cell(s.peak_allocated),
                   Cell(format_bytes(s.peak_reserved))};
  return t;
}

std::string leaks_paragraph(const DeviceMemory& d) {
  std::string out = fmt::format(
      "{} in {} allocations never freed within the trace ({} of it allocated after the first "
      "step); {} frees of memory allocated before the trace ({}).",
      format_bytes(d.never_freed_bytes), d.never_freed.size(),
      format_bytes(d.never_freed_after_first_step_bytes), d.unknown_frees,
      format_bytes(d.unknown_freed_bytes));
  if (!d.steps.empty())
    out += fmt::format(" {} step{}, median growth {} per step{}.", d.steps.size(),
                       d.steps.size() == 1 ? "" : "s", format_bytes(d.growth_per_step),
                       d.grows_every_step ? ", growing in every step after the first" : "");
  return "<p>" + html_escape(out) + "</p>\n";
}

std::string heading(std::string_view text) {
  return "<h3>" + html_escape(text) + "</h3>\n";
}

// A table, or a note saying why there is none.
std::string table_or_note(const Table& t, size_t rows, std::string_view empty_note) {
  if (t.rows.empty()) return "<p class=\"note\">" + html_escape(empty_note) + "</p>\n";
  return html_table(t, rows);
}

std::string device_body(const DeviceMemory& d, const MemoryPageOptions& options) {
  MemoryTimelineChart chart = memory_timeline_chart(d, options.timeline_points);
  std::string out = html_figure(to_svg(chart), chart_caption(d, chart.points.size()));
  out += heading("Held at the peak, by op");
  out += table_or_note(holders_table(chart), options.table_rows,
                       "No allocation made within the trace is live at the peak.");
  out += heading("Largest allocations live at the peak");
  out += table_or_note(allocations_table(d.live_at_peak, options.table_rows, "memory_at_peak"),
                       options.table_rows, "None.");
  out += heading("Leaks and growth");
  out += leaks_paragraph(d);
  out += table_or_note(leaks_table(d), options.table_rows,
                       "Every allocation made within the trace was freed within it.");
  if (!d.steps.empty()) {
    out += heading("Per ProfilerStep");
    out += html_table(steps_table(d), options.table_rows);
  }
  return out;
}

std::string findings_body(const memory::MemoryAnalysis& analysis) {
  if (analysis.findings.empty())
    return "<p class=\"note\">No memory finding: activations do not dominate the peak, the "
           "reserved-minus-allocated gap is small and memory does not grow from step to "
           "step.</p>\n";
  std::string out;
  for (const memory::MemoryFinding& f : analysis.findings)
    out += fmt::format(
        "<div class=\"finding\">\n<h3>{} <span class=\"note\">({}, {})</span></h3>\n"
        "<p>{}</p>\n<p><b>What to do:</b> {}</p>\n</div>\n",
        html_escape(f.title), html_escape(f.device), html_escape(f.rule), html_escape(f.evidence),
        html_escape(f.action));
  return out;
}

}  // namespace

MemoryTimelineChart memory_timeline_chart(const DeviceMemory& device, size_t max_points) {
  MemoryTimelineChart c;
  c.title = fmt::format("{} memory: allocated and reserved", device.device);
  c.device = device.device;
  for (const memory::TimelinePoint& p : memory::downsample(device.timeline, max_points))
    c.points.push_back({ns_to_us(p.ts_ns), double(p.allocated), double(p.reserved)});
  c.peak_ts_us = ns_to_us(device.peak_ts_ns);
  c.peak_bytes = double(device.peak_allocated);
  c.peak_label = "peak " + format_bytes(device.peak_allocated);
  for (const memory::StepMemory& s : device.steps)
    c.steps.push_back({s.name, ns_to_us(s.start_ns), ns_to_us(s.end_ns)});
  for (const memory::OpGroup& g : device.by_op)  // by_op is sorted by bytes at the peak
    if (g.at_peak_bytes > 0)
      c.holders.push_back({g.op, g.module, g.at_peak, double(g.at_peak_bytes)});
  return c;
}

std::vector<NamedChart> memory_charts(const memory::MemoryAnalysis& analysis, size_t max_points) {
  std::vector<NamedChart> out;
  for (const DeviceMemory& d : analysis.devices) {
    MemoryTimelineChart chart = memory_timeline_chart(d, max_points);
    std::string caption = chart_caption(d, chart.points.size());
    out.push_back({"memory_" + device_id(d.device), std::move(caption), std::move(chart)});
  }
  return out;
}

HtmlSection memory_report_section(const std::vector<NamedChart>& charts, size_t rows) {
  std::string body =
      "<p class=\"note\">From the trace's [memory] events (profile_memory=True); "
      "<code>jarvis memory TRACE --html FILE</code> has the full page: largest allocations, "
      "leaks, growth per step, findings.</p>\n";
  for (const NamedChart& c : charts) {
    const auto* chart = std::get_if<MemoryTimelineChart>(&c.chart);
    if (!chart) continue;
    body += heading(chart->device);
    body += html_figure(to_svg(*chart), c.caption);
    body += table_or_note(holders_table(*chart), rows,
                          "No allocation made within the trace is live at the peak.");
  }
  return {"memory", "Memory: allocated and reserved over time, what holds the peak", body};
}

std::string memory_html(const memory::MemoryAnalysis& analysis, const MemoryPageOptions& options) {
  std::vector<HtmlSection> sections;
  sections.push_back({"summary", "Devices",
                      "<p>" + html_escape(options.trace_path) + "</p>\n" +
                          html_table(devices_table(analysis), 100)});
  for (const DeviceMemory& d : analysis.devices)
    sections.push_back(
        {"memory_" + device_id(d.device), d.device + " memory", device_body(d, options)});
  sections.push_back({"findings", "Findings", findings_body(analysis)});
  std::string title =
      options.title.empty()
          ? "jarvis memory: " + std::filesystem::path(options.trace_path).filename().string()
          : options.title;
  std::string subtitle = fmt::format(
      "Device memory from the trace's [memory] events: {} device{}, peak {} on {}; tables sort "
      "on a click on their header.",
      analysis.devices.size(), analysis.devices.size() == 1 ? "" : "s",
      format_bytes(analysis.primary().peak_allocated), analysis.primary().device);
  return html_page(title, subtitle, sections);
}

}  // namespace jarvis::charts
