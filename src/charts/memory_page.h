// Device memory on HTML pages: the memory page (`jarvis memory TRACE --html
// FILE`: per device the timeline chart, what holds the peak, leaks and
// growth per step, then the findings) and the memory section of the
// single-trace report (charts and the holders at the peak). Both draw the
// downsampled timeline (memory::downsample keeps the peak), so a page stays
// small however many samples the trace has.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "charts/charts.h"
#include "charts/html.h"
#include "memory/memory.h"

namespace jarvis::charts {

// Timeline points drawn per device: more than a chart has pixels across.
inline constexpr size_t kMemoryChartPoints = 1000;

// One device's chart: its downsampled timeline, its steps, its peak labelled
// "peak <size>" in the spelling of memory_summary_text, and the op groups
// live at the peak.
MemoryTimelineChart memory_timeline_chart(const memory::DeviceMemory& device,
                                          size_t max_points = kMemoryChartPoints);

// One chart per device in the analysis' order (GPUs first), named
// memory_<device> with ':' as '_' ("memory_cuda_0", "memory_cpu").
std::vector<NamedChart> memory_charts(const memory::MemoryAnalysis& analysis,
                                      size_t max_points = kMemoryChartPoints);

// The report's memory section (id "memory"): per MemoryTimelineChart among
// `charts` the chart and the op groups holding its peak, at most `rows`.
HtmlSection memory_report_section(const std::vector<NamedChart>& charts, size_t rows);

struct MemoryPageOptions {
  std::string title;       // page title (default: "jarvis memory: " + file name)
  std::string trace_path;  // shown in the summary
  size_t timeline_points = kMemoryChartPoints;
  size_t table_rows = 50;  // rows per table
};

// The whole memory page.
std::string memory_html(const memory::MemoryAnalysis& analysis, const MemoryPageOptions& options);

}  // namespace jarvis::charts
