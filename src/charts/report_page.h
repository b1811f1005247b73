// The single-trace HTML report (`jarvis report TRACE --html FILE`, MCP
// render_report): the verdict (trace health, GPU busy / idle and its causes,
// ranked findings with recoverable time), summary, GPU timeline split, time by category, top ops
// with their roofline efficiency, rooflines (all modelled ops, GEMMs), short-kernel histogram, the
// zoomable timeline of CPU threads and GPU streams (timeline_view.h; the SVG kernel strip stays
// among the charts for --svg-dir), the memory timeline per device with the holders of its peak
// (traces with [memory] events only), and sortable tables of the main sheets.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "charts/charts.h"
#include "insights/insights.h"
#include "insights/trace_health.h"
#include "perf/gpu_arch.h"
#include "report/report.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis::charts {

// What the page opens with: whether the trace can be trusted, how busy the
// GPU was and what kept it idle, and the findings ranked by the time a fix
// could recover (the `jarvis insights` ranking).
struct ReportVerdict {
  insights::TraceHealth health;
  std::vector<insights::Insight> findings;  // ranked, largest recoverable time first
  double total_kernel_time_us = 0;
  // The trace's dependency graph and measured critical path (null when none
  // could be built): the annotated trace and the page's timeline draw it.
  std::shared_ptr<const insights::InsightContext::StepModel> step;
};

// Runs every insight rule on the trace and its call tree (a tree without
// Python frames, as the insights read); `arch` null: the rules that need
// peaks skip. `step`: the trace's step model when the caller keeps one (an
// MCP session's trace), else built here.
ReportVerdict report_verdict(const Trace& trace, const CallTree& tree, const GpuArch* arch,
                             const insights::StepModelRef* step = nullptr);

struct ReportPageOptions {
  std::string title;                       // page title (default: trace file name)
  std::string trace_path;                  // shown in the summary
  std::string arch_name;                   // "" = no arch (no rooflines)
  nlohmann::ordered_json arch;             // arch dict: mem_bw_gbps, max_achievable_tflops
  size_t top_ops = 20;                     // rows of the top-ops charts
  size_t table_rows = 200;                 // rows per sortable table
  size_t timeline_max_kernels = 2000;      // kernels drawn in the timeline strip (SVG)
  size_t timeline_max_slices = 40000;      // slices of the page's interactive timeline
  const ReportVerdict* verdict = nullptr;  // null: the page has no verdict section
  size_t verdict_findings = 10;            // findings listed in the verdict
  // File name of the annotated trace written beside the page
  // (annotated_trace.h), linked from the verdict; "" = none.
  std::string annotated_trace;
};

// Every chart of the report page, in page order. Charts whose data is absent
// (no perf model sheet, no short kernels, no arch, no [memory] events) are
// left out; the memory charts (MemoryTimelineChart, one per device) come last.
std::vector<NamedChart> report_charts(const Trace& trace, const Report& report,
                                      const ReportPageOptions& options);

// The whole page. `charts` is report_charts' result.
std::string report_html(const Trace& trace, const Report& report,
                        const std::vector<NamedChart>& charts, const ReportPageOptions& options);

// Writes DIR/<name>.svg for every chart (atomically) and returns the paths.
std::vector<std::string> write_chart_svgs(const std::vector<NamedChart>& charts,
                                          const std::string& dir);

}  // namespace jarvis::charts
