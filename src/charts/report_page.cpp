#include "charts/report_page.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "charts/html.h"
#include "charts/memory_page.h"
#include "charts/timeline_view.h"
#include "report/gpu_timeline.h"
#include "tree/call_tree.h"

namespace jarvis::charts {

namespace {

double number_at(const Table& t, size_t row, std::string_view column) {
  int c = t.col(column);
  if (c < 0 || static_cast<size_t>(c) >= t.rows[row].size()) return NAN;
  const Cell& cell = t.rows[row][static_cast<size_t>(c)];
  if (cell.is_text()) {  // sheets read back from CSV hold text cells
    try {
      return std::stod(cell.text());
    } catch (const std::exception&) {
      return NAN;
    }
  }
  return cell.number();
}

std::string text_at(const Table& t, size_t row, std::string_view column) {
  int c = t.col(column);
  if (c < 0 || static_cast<size_t>(c) >= t.rows[row].size()) return "";
  const Cell& cell = t.rows[row][static_cast<size_t>(c)];
  if (cell.is_text()) return cell.text();
  return cell.missing() ? "" : cell.to_csv_text(cell.is_double());
}

// Row indices sorted by a numeric column, largest first (NaN last).
std::vector<size_t> rows_by(const Table& t, std::string_view column) {
  std::vector<size_t> order(t.rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    double x = number_at(t, a, column), y = number_at(t, b, column);
    if (std::isnan(x)) return false;
    if (std::isnan(y)) return true;
    return x > y;
  });
  return order;
}

std::string op_label(const Table& t, size_t row) {
  std::string dims = text_at(t, row, "Input Dims");
  std::string name = text_at(t, row, "name");
  return dims.empty() ? name : name + " " + dims;
}

NamedChart timeline_split_chart(const GpuTimeline& tl) {
  BarChart c;
  c.title = "GPU timeline split";
  c.value_label = "Time";
  c.unit = Unit::Microseconds;
  c.stacked = true;
  c.categories = {"GPU"};
  c.series = {{"computation", {tl.computation_time}},
              {"exposed communication", {tl.exposed_comm_time}},
              {"exposed memcpy", {tl.exposed_memcpy_time}},
              {"idle", {tl.idle_time}}};
  return {"gpu_timeline",
          fmt::format("Where the {} of GPU time went (TraceLens gpu_timeline: busy = computation "
                      "+ exposed communication + exposed memcpy).",
                      format_value(tl.total_time, Unit::Microseconds)),
          c};
}

std::optional<NamedChart> category_chart(const Report& report) {
  const Table* t = report.find("ops_summary_by_category");
  if (!t || t->rows.empty()) return std::nullopt;
  BarChart c;
  c.title = "Kernel time by op category";
  c.value_label = "Kernel time";
  c.unit = Unit::Microseconds;
  c.series = {{"kernel time", {}}};
  for (size_t r : rows_by(*t, "total_direct_kernel_time_ms")) {
    c.categories.push_back(text_at(*t, r, "op category"));
    c.series[0].values.push_back(number_at(*t, r, "total_direct_kernel_time_ms") * 1e3);
  }
  return NamedChart{"categories", "Direct kernel time of the CPU ops in each category.", c};
}

// Top ops by kernel time, and their roofline efficiency (unified sheet).
std::vector<NamedChart> top_ops_charts(const Report& report, size_t top_n) {
  const Table* t = report.find("unified_perf_summary");
  if (!t || t->rows.empty()) return {};
  BarChart time, efficiency;
  time.title = fmt::format("Top {} ops by kernel time", top_n);
  time.value_label = "Kernel time";
  time.unit = Unit::Microseconds;
  time.series = {{"kernel time", {}}};
  efficiency.title = "Roofline efficiency of the top ops";
  efficiency.value_label = "Share of the roofline";
  efficiency.unit = Unit::Percent;
  efficiency.series = {{"Pct Roofline (mean)", {}}};
  auto order = rows_by(*t, "Kernel Time (µs)_sum");
  for (size_t i = 0; i < order.size() && i < top_n; ++i) {
    std::string label = op_label(*t, order[i]);
    time.categories.push_back(label);
    time.series[0].values.push_back(number_at(*t, order[i], "Kernel Time (µs)_sum"));
    efficiency.categories.push_back(label);
    efficiency.series[0].values.push_back(number_at(*t, order[i], "Pct Roofline_mean"));
  }
  std::vector<NamedChart> out = {
      {"top_ops", "Ops with a perf model (unified_perf_summary), most kernel time first.", time}};
  bool any_efficiency =
      std::any_of(efficiency.series[0].values.begin(), efficiency.series[0].values.end(),
                  [](double v) { return std::isfinite(v); });
  if (any_efficiency)
    out.push_back({"top_ops_efficiency",
                   "Achieved share of the roofline bound (TraceLens Pct Roofline, mean over "
                   "calls) for the same ops; no bar = no roofline for that op.",
                   efficiency});
  return out;
}

std::vector<ComputeRoof> roofs_for(const nlohmann::ordered_json& arch,
                                   const std::set<std::string>& specs) {
  std::vector<ComputeRoof> roofs;
  if (!arch.contains("max_achievable_tflops")) return roofs;
  for (const auto& spec : specs) {
    auto it = arch["max_achievable_tflops"].find(spec);
    if (it != arch["max_achievable_tflops"].end() && it->is_number())
      roofs.push_back({spec, it->get<double>()});
  }
  return roofs;
}

// Roofline of the unified sheet's rows; gemm_only colours by compute spec.
std::optional<NamedChart> roofline_chart(const Report& report, const ReportPageOptions& options,
                                         bool gemm_only) {
  const Table* t = report.find("unified_perf_summary");
  if (!t || options.arch.is_null() || !options.arch.contains("mem_bw_gbps")) return std::nullopt;
  RooflineChart c;
  c.peak_bw_tbs = options.arch["mem_bw_gbps"].get<double>() / 1e3;
  std::set<std::string> specs;
  for (size_t r = 0; r < t->rows.size(); ++r) {
    std::string category = text_at(*t, r, "op category");
    if (gemm_only && category != "GEMM") continue;
    RooflinePoint p{op_label(*t, r), gemm_only ? text_at(*t, r, "Compute Spec") : category,
                    number_at(*t, r, "FLOPS/Byte"), number_at(*t, r, "TFLOPS/s_mean"),
                    number_at(*t, r, "Kernel Time (µs)_sum")};
    if (!(p.flops_per_byte > 0) || !(p.tflops > 0)) continue;
    specs.insert(text_at(*t, r, "Compute Spec"));
    c.points.push_back(std::move(p));
  }
  if (c.points.empty()) return std::nullopt;
  c.roofs = roofs_for(options.arch, specs);
  c.title = fmt::format("{} roofline ({})", gemm_only ? "GEMM" : "Op", options.arch_name);
  std::string caption =
      gemm_only ? "One circle per GEMM shape, coloured by compute spec (precision)"
                : "One circle per op and shape with a perf model, coloured by op category";
  return NamedChart{gemm_only ? "gemm_roofline" : "roofline",
                    caption +
                        "; circle area follows kernel time; lines are the arch's memory "
                        "and compute roofs.",
                    c};
}

std::optional<NamedChart> short_kernel_chart(const Report& report) {
  const Table* t = report.find("short_kernel_histogram");
  if (!t || t->rows.empty()) return std::nullopt;
  HistogramChart c;
  c.title = "Short kernels: duration histogram";
  c.value_label = "Kernel duration";
  c.unit = Unit::Microseconds;
  for (size_t r = 0; r < t->rows.size(); ++r)
    c.bins.push_back(
        {number_at(*t, r, "bin_start"), number_at(*t, r, "bin_end"), number_at(*t, r, "count")});
  return NamedChart{"short_kernels",
                    "Kernels shorter than the short-kernel threshold (TraceLens "
                    "short_kernel_histogram): many tiny kernels point at launch overhead.",
                    c};
}

std::string event_group(const Trace& trace, Uid uid) {
  const Event& e = trace.events[uid];
  if (e.cat == Cat::GpuMemcpy) return "memcpy";
  if (e.cat == Cat::GpuMemset) return "memset";
  std::string_view name = trace.name(uid);
  if (name.find("nccl") != std::string_view::npos || name.find("rccl") != std::string_view::npos)
    return "communication kernel";
  return "compute kernel";
}

std::string lane_of(const Trace& trace, const Event& e) {
  std::string stream = trace.stream(e) == kNoInt ? "?" : std::to_string(trace.stream(e));
  if (trace.device(e) == kNoInt) return "stream " + stream;
  return fmt::format("GPU {} stream {}", trace.device(e), stream);
}

// GPU events per stream; with more than max_kernels, the max_kernels
// consecutive events around the middle of the trace (steady state).
std::optional<NamedChart> timeline_chart(const Trace& trace, size_t max_kernels) {
  std::vector<Uid> gpu;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (e.is_gpu() && e.has_ts() && e.has_dur()) gpu.push_back(u);
  }
  if (gpu.empty() || max_kernels == 0) return std::nullopt;
  std::stable_sort(gpu.begin(), gpu.end(),
                   [&](Uid a, Uid b) { return trace.events[a].ts() < trace.events[b].ts(); });
  size_t first = 0, count = gpu.size();
  if (count > max_kernels) first = (count - max_kernels) / 2, count = max_kernels;
  TimelineChart c;
  c.window_start_us = trace.events[gpu[first]].ts();
  c.window_end_us = c.window_start_us;
  std::set<std::string> lanes;
  for (size_t i = first; i < first + count; ++i) {
    const Event& e = trace.events[gpu[i]];
    c.window_end_us = std::max(c.window_end_us, e.end());
    c.bars.push_back({lane_of(trace, e), std::string(trace.name(gpu[i])),
                      event_group(trace, gpu[i]), e.ts(), e.end()});
    lanes.insert(c.bars.back().lane);
  }
  c.lanes.assign(lanes.begin(), lanes.end());
  c.title = "GPU kernels per stream";
  std::string scope = count == gpu.size()
                          ? fmt::format("all {} GPU events", count)
                          : fmt::format(
                                "{} consecutive GPU events of {} from the middle of the "
                                "trace",
                                count, gpu.size());
  return NamedChart{
      "timeline",
      fmt::format("Timeline strip of {} ({} window).", scope,
                  format_value(c.window_end_us - c.window_start_us, Unit::Microseconds)),
      c};
}

// What the timeline's event count counts: every GPU event, or (when the
// trace holds GPU events no launch links) the linked ones, of how many.
std::string timeline_events_label(const Trace& trace, const GpuTimeline& tl) {
  size_t all = 0;
  for (const Event& e : trace.events) all += e.is_gpu() ? 1 : 0;
  if (all <= tl.event_count) return "GPU events";
  return fmt::format("GPU events linked to a launch (of {} in the trace)", all);
}

Table summary_table(const Trace& trace, const Report& report, const ReportPageOptions& options) {
  Table t("summary", {"item", "value"});
  auto add = [&](std::string item, Cell value) {
    auto& row = t.add_row();
    row[0] = Cell(std::move(item));
    row[1] = std::move(value);
  };
  add("trace", options.trace_path);
  add("platform", platform_name(trace.platform));
  add("GPU", trace.gpu_name());
  add("arch for rooflines", options.arch_name.empty() ? "none" : options.arch_name);
  const GpuTimeline& tl = report.timeline;
  // The timeline counts the GPU events linked to a launch, as TraceLens's
  // gpu_timeline does; the trace's own count sits beside it when it differs.
  add(timeline_events_label(trace, tl), tl.event_count);
  add("total time", format_value(tl.total_time, Unit::Microseconds));
  add("busy time", format_value(tl.busy_time, Unit::Microseconds));
  add("idle time", format_value(tl.idle_time, Unit::Microseconds));
  if (tl.total_time > 0) add("GPU utilisation (%)", 100 * tl.busy_time / tl.total_time);
  if (const Table* cat = report.find("ops_summary_by_category"); cat && !cat->rows.empty()) {
    size_t top = rows_by(*cat, "total_direct_kernel_time_ms").front();
    add("largest category",
        fmt::format("{} ({:.1f} % of kernel time)", text_at(*cat, top, "op category"),
                    number_at(*cat, top, "Percentage (%)")));
  }
  return t;
}

// Op groups listed under each memory chart; the memory page lists them all.
constexpr size_t kMemoryHolderRows = 10;

const std::vector<std::string> kUnifiedColumns = {"name",
                                                  "op category",
                                                  "Input Dims",
                                                  "Input type",
                                                  "operation_count",
                                                  "Kernel Time (µs)_sum",
                                                  "Kernel Time (µs)_mean",
                                                  "GFLOPS",
                                                  "Data Moved (MB)",
                                                  "FLOPS/Byte",
                                                  "Compute Spec",
                                                  "Roofline Bound",
                                                  "TFLOPS/s_mean",
                                                  "TB/s_mean",
                                                  "Pct Roofline_mean"};

std::string table_section(const Report& report, std::string_view sheet, size_t rows,
                          const std::vector<std::string>& columns = {}) {
  const Table* t = report.find(sheet);
  return t ? html_table(*t, rows, columns) : "";
}

std::string ms(double us) {
  return fmt::format("{:.1f} ms", us / 1e3);
}

std::string health_html(const insights::TraceHealth& h) {
  std::string out = fmt::format(
      "<p><b>Trace health: {} confidence</b>: {} GPU events, {:.0f} % of them launched by an op "
      "the call tree knows; {} profiler step(s).</p>\n",
      html_escape(h.confidence), h.gpu_events,
      h.gpu_events ? 100.0 * h.linked_gpu_events / h.gpu_events : 0.0, h.profiler_steps);
  if (h.recorded_step_us && h.estimated_unprofiled_step_us)
    out += fmt::format(
        "<p><b>Step without the profiler: {} (estimated), {}-bound</b>; {} as recorded{} "
        "(the profiler's own host time per step: ~{}). Step times and savings below are for "
        "the un-profiled step.</p>\n",
        ms(*h.estimated_unprofiled_step_us), html_escape(h.unprofiled_bound_by),
        ms(*h.recorded_step_us),
        h.recorded_bound_by.empty() ? ""
                                    : fmt::format(", {}-bound", html_escape(h.recorded_bound_by)),
        ms(h.profiler_host_us_per_step));
  if (h.warnings.empty()) return out;
  out += "<ul class=\"warnings\">\n";
  for (const std::string& w : h.warnings) out += "<li>" + html_escape(w) + "</li>\n";
  return out + "</ul>\n";
}

// Busy and idle time, with the findings about the whole trace (launch-bound
// steps, host gaps) as the idle time's causes.
std::string busy_idle_html(const GpuTimeline& tl, const std::vector<insights::Insight>& findings) {
  if (tl.total_time <= 0) return "<p>No GPU time in this trace.</p>\n";
  std::string out = fmt::format(
      "<p><b>GPU busy {} of {} ({:.0f} %)</b>: computation {}, exposed communication {}, "
      "exposed memcpy {}; <b>idle {} ({:.0f} %)</b>.</p>\n",
      ms(tl.busy_time), ms(tl.total_time), 100 * tl.busy_time / tl.total_time,
      ms(tl.computation_time), ms(tl.exposed_comm_time), ms(tl.exposed_memcpy_time),
      ms(tl.idle_time), 100 * tl.idle_time / tl.total_time);
  std::string causes;
  for (const auto& f : findings)
    if (f.scope == "trace") causes += "<li>" + html_escape(f.title) + "</li>\n";
  if (!causes.empty()) out += "<p>Why the GPU waits:</p>\n<ul>\n" + causes + "</ul>\n";
  return out;
}

// The first sentence of a finding's action: the fix with its value ("N=32001
// looks like a vocabulary: pad it to 32064 and mask the extra logits."),
// cut at 240 characters.
std::string fix_text(const std::string& action) {
  constexpr size_t kMax = 240;
  size_t end = action.find(". ");
  end = end == std::string::npos ? action.size() : end + 1;
  if (end <= kMax) return action.substr(0, end);
  size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(action[cut]) & 0xC0) == 0x80) --cut;
  return action.substr(0, cut) + "...";
}

Table findings_table(const ReportVerdict& v, const GpuTimeline& tl, size_t top) {
  Table t("findings",
          {"rank", "severity", "finding", "fix", "saves per step (ms)", "share (%)", "rule"});
  for (size_t k = 0; k < v.findings.size() && k < top; ++k) {
    const auto& f = v.findings[k];
    auto& row = t.add_row();
    row[0] = Cell(static_cast<int64_t>(k + 1));
    row[1] = Cell(f.severity);
    row[2] = Cell(f.title);
    row[3] = Cell(fix_text(f.action_model.empty() ? f.action_kernel : f.action_model));
    // What the fix saves per step (the what-if on the un-profiled step, else
    // the recoverable time), the value the findings are ranked by.
    const double steps = static_cast<double>(std::max<size_t>(1, f.steps));
    if (f.step_saving_us || f.recoverable_us) {
      const double saving = insights::ranking_saving_us(f);
      row[4] = Cell(saving / steps / 1e3);
      // Of the GPU time for trace-wide findings, of kernel time for the rest.
      double base = f.scope == "trace" ? tl.total_time : v.total_kernel_time_us;
      if (base > 0) row[5] = Cell(100 * saving / base);
    }
    row[6] = Cell(f.rule);
  }
  return t;
}

std::string verdict_html(const ReportVerdict& v, const GpuTimeline& tl, size_t top) {
  std::string out = health_html(v.health) + busy_idle_html(tl, v.findings);
  if (v.findings.empty()) return out + "<p>No finding: no insight rule fired on this trace.</p>\n";
  out += fmt::format(
      "<p><b>{} finding(s)</b>, ranked by what a fix saves per step without the profiler (the "
      "critical path's what-if, else the recoverable time; each claiming only time no finding "
      "above it claims; `jarvis insights` has the evidence and the actions):</p>\n",
      v.findings.size());
  return out + html_table(findings_table(v, tl, top), top);
}

// The memory findings of a trace recorded with profile_memory=True (a leak
// across steps, activations holding the peak, a reserved gap), so that the
// page a person opens first names what `jarvis memory` finds.
std::string memory_verdict_html(const Trace& trace) {
  auto analysis = memory::analyse_memory_if_recorded(trace);
  if (!analysis || analysis->findings.empty()) return "";
  std::string out = fmt::format(
      "<p><b>Memory: {} finding(s)</b> from the trace's [memory] events (the memory section "
      "below has the peaks; <code>jarvis memory TRACE --html FILE</code> the whole page):</p>\n"
      "<ul class=\"memory-findings\">\n",
      analysis->findings.size());
  for (const memory::MemoryFinding& f : analysis->findings)
    out += fmt::format("<li><b>{}</b> ({}): {} <i>Fix:</i> {}</li>\n", html_escape(f.title),
                       html_escape(f.device), html_escape(f.evidence), html_escape(f.action));
  return out + "</ul>\n";
}

// The link to the annotated trace beside the page.
std::string annotated_trace_html(const std::string& file) {
  if (file.empty()) return "";
  return fmt::format(
      "<p class=\"annotated\">Every event of the trace with the critical path and the findings "
      "as extra tracks: <a id=\"annotated-trace\" href=\"{0}\" download>{0}</a> (open it in "
      "Perfetto UI, ui.perfetto.dev, or in chrome://tracing; the file stays on this "
      "machine).</p>\n",
      html_escape(file));
}

}  // namespace

ReportVerdict report_verdict(const Trace& trace, const CallTree& tree, const GpuArch* arch,
                             const insights::StepModelRef* step) {
  // The findings first (their context holds the step model and the GPU
  // timeline), then the health block from the same model and timeline: one
  // step model per page (the health built a second one of its own before).
  std::optional<insights::TraceInsights> analysed;
  if (step) {
    insights::InsightContext context = insights::make_context(trace, tree, arch, nullptr, step);
    std::vector<insights::Insight> found = insights::run_insights(context);
    analysed.emplace(insights::TraceInsights{std::move(context), std::move(found)});
  } else {
    analysed.emplace(insights::analyse_trace(trace, tree, arch));
  }
  const insights::InsightContext& context = analysed->context;
  ReportVerdict v;
  v.health = insights::trace_health(context);
  v.total_kernel_time_us = context.total_kernel_time_us;
  v.findings = std::move(analysed->found);
  v.step = context.step;
  return v;
}

std::vector<NamedChart> report_charts(const Trace& trace, const Report& report,
                                      const ReportPageOptions& options) {
  std::vector<NamedChart> out;
  out.push_back(timeline_split_chart(report.timeline));
  if (auto c = category_chart(report)) out.push_back(std::move(*c));
  for (auto& c : top_ops_charts(report, options.top_ops)) out.push_back(std::move(c));
  if (auto c = roofline_chart(report, options, false)) out.push_back(std::move(*c));
  if (auto c = roofline_chart(report, options, true)) out.push_back(std::move(*c));
  if (auto c = short_kernel_chart(report)) out.push_back(std::move(*c));
  if (auto c = timeline_chart(trace, options.timeline_max_kernels)) out.push_back(std::move(*c));
  if (auto m = memory::analyse_memory_if_recorded(trace))
    for (auto& c : memory_charts(*m)) out.push_back(std::move(c));
  return out;
}

std::string report_html(const Trace& trace, const Report& report,
                        const std::vector<NamedChart>& charts, const ReportPageOptions& options) {
  std::vector<HtmlSection> sections;
  if (options.verdict)
    sections.push_back({"verdict", "Verdict",
                        verdict_html(*options.verdict, report.timeline, options.verdict_findings) +
                            memory_verdict_html(trace) +
                            annotated_trace_html(options.annotated_trace)});
  sections.push_back({"summary", "Summary",
                      html_table(summary_table(trace, report, options), 100) +
                          table_section(report, "gpu_timeline", 20)});
  // The interactive timeline replaces the SVG strip on the page (the strip
  // stays among the charts for --svg-dir).
  const TimelineViewData timeline = timeline_view_data(
      trace, options.verdict && options.verdict->step ? &options.verdict->step->recorded : nullptr,
      options.timeline_max_slices);
  if (!timeline.json.empty())
    sections.push_back({"timeline_view", "Timeline", timeline_view_html(timeline)});
  bool has_memory = false;
  for (const auto& c : charts) {
    if (!timeline.json.empty() && std::holds_alternative<TimelineChart>(c.chart)) continue;
    // The memory charts go together in one section, with the holders of each peak.
    if (std::holds_alternative<MemoryTimelineChart>(c.chart)) {
      has_memory = true;
      continue;
    }
    sections.push_back({c.name, std::visit([](const auto& x) { return x.title; }, c.chart),
                        html_figure(to_svg(c.chart), c.caption)});
  }
  if (has_memory) sections.push_back(memory_report_section(charts, kMemoryHolderRows));
  auto add_table = [&](std::string id, std::string heading, std::string_view sheet,
                       const std::vector<std::string>& columns = {}) {
    std::string body = table_section(report, sheet, options.table_rows, columns);
    if (!body.empty()) sections.push_back({std::move(id), std::move(heading), std::move(body)});
  };
  add_table("table_categories", "Table: ops by category", "ops_summary_by_category");
  add_table("table_unified", "Table: ops with perf model and roofline", "unified_perf_summary",
            kUnifiedColumns);
  add_table("table_ops", "Table: ops summary", "ops_summary");
  add_table("table_kernels", "Table: kernel summary", "kernel_summary");
  add_table("table_short_kernels", "Table: short kernels", "short_kernels_summary");
  std::string title =
      options.title.empty()
          ? "jarvis report: " + std::filesystem::path(options.trace_path).filename().string()
          : options.title;
  std::string subtitle =
      fmt::format("{} {}, {} total; tables sort on a click on their header.",
                  report.timeline.event_count, timeline_events_label(trace, report.timeline),
                  format_value(report.timeline.total_time, Unit::Microseconds));
  return html_page(title, subtitle, sections);
}

std::vector<std::string> write_chart_svgs(const std::vector<NamedChart>& charts,
                                          const std::string& dir) {
  std::vector<std::string> paths;
  for (const auto& c : charts) {
    std::string path = (std::filesystem::path(dir) / (c.name + ".svg")).string();
    write_file_atomic(path, to_svg(c.chart));
    paths.push_back(path);
  }
  return paths;
}

}  // namespace jarvis::charts
