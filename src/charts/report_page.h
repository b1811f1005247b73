// The single-trace HTML report (`jarvis report TRACE --html FILE`, MCP
// render_report): summary, GPU timeline split, time by category, top ops with
// their roofline efficiency, rooflines (all modelled ops, GEMMs), short-kernel
// histogram, a kernel timeline strip, the memory timeline per device with the
// holders of its peak (traces with [memory] events only), and sortable tables
// of the main sheets.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "charts/charts.h"
#include "report/report.h"
#include "trace/trace.h"

namespace jarvis::charts {

struct ReportPageOptions {
  std::string title;                   // page title (default: trace file name)
  std::string trace_path;              // shown in the summary
  std::string arch_name;               // "" = no arch (no rooflines)
  nlohmann::ordered_json arch;         // arch dict: mem_bw_gbps, max_achievable_tflops
  size_t top_ops = 20;                 // rows of the top-ops charts
  size_t table_rows = 200;             // rows per sortable table
  size_t timeline_max_kernels = 2000;  // kernels drawn in the timeline strip
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
