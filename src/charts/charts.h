// Charts: plain data in, standalone SVG out. The same SVG text is written to
// .svg files (linked from findings markdown, opened anywhere) and inlined
// into the HTML reports (src/charts/html.h), so a page and its files never
// disagree. No scripting, fonts or external resources: an SVG renders the
// same in a browser, an image viewer or a mail client.
//
// Every chart marks its data for checking: each data mark carries
// class="mark" (one per data row, see each kind), and the plot area is a
// <g class="plot" data-x-min=.. data-x-max=.. data-y-min=.. data-y-max=..>
// giving the axis domains in data units (log axes: data units, not decades).
#pragma once

#include <string>
#include <variant>
#include <vector>

namespace jarvis::charts {

// What a value measures; picks tick formatting (µs/ms/s, TFLOPS/s, ...).
enum class Unit {
  None,
  Microseconds,
  Percent,
  Count,
  TflopsPerSec,
  TbPerSec,
  FlopsPerByte,
  Bytes  // binary units (KiB, MiB, GiB), as allocators count
};

// A scale for one axis: values are divided by `divisor` and shown with
// `suffix` (time axes pick µs, ms or s from the largest value).
struct DisplayUnit {
  double divisor = 1;
  std::string suffix;  // "ms", "TFLOPS/s", "%", "" ...
};
DisplayUnit display_unit(Unit unit, double max_abs_value);
// A single value with its unit, e.g. "1.25 ms", "43.1 %", "12 TFLOPS/s".
std::string format_value(double value, Unit unit);

// Okabe-Ito colour-blind-safe palette; index wraps around.
const std::string& palette_colour(size_t index);

// Horizontal bars, one row per category; several series side by side or
// stacked. Marks: one rect per (category, series) with a finite value > 0
// when stacked, per finite value otherwise.
struct BarSeries {
  std::string name;
  std::vector<double> values;  // one per category
};
struct BarChart {
  std::string title;
  std::string value_label;  // axis title without unit, e.g. "Kernel time"
  Unit unit = Unit::None;
  std::vector<std::string> categories;
  std::vector<BarSeries> series;
  bool stacked = false;
};

// Histogram over a numeric axis. Marks: one rect per bin.
struct HistogramBin {
  double start = 0, end = 0, count = 0;
};
struct HistogramChart {
  std::string title;
  std::string value_label;  // x axis, e.g. "Kernel duration"
  Unit unit = Unit::None;
  std::vector<HistogramBin> bins;
};

// Distribution of a value per group (box or violin). Marks: one per group
// with at least one finite value (the box, or the violin body).
enum class DistributionKind { Box, Violin };
struct DistributionGroup {
  std::string label;
  std::vector<double> values;
};
struct DistributionChart {
  std::string title;
  std::string field_label;  // x axis, e.g. "threads"
  std::string value_label;  // y axis, e.g. "GEMM kernel time"
  Unit unit = Unit::None;
  DistributionKind kind = DistributionKind::Box;
  std::vector<DistributionGroup> groups;
};

// Interaction plot: mean value per level of x_field, one line per level of
// line_field. Marks: one point per finite mean.
struct InteractionLine {
  std::string label;
  std::vector<double> means;  // one per x level, NaN = no data
};
struct InteractionChart {
  std::string title;
  std::string x_label, line_label, value_label;
  Unit unit = Unit::None;
  std::vector<std::string> x_levels;
  std::vector<InteractionLine> lines;
};

// Log-log roofline: achieved TFLOPS/s over arithmetic intensity, the memory
// roof (peak TB/s) and one flat roof per compute peak. Marks: one circle per
// point with positive intensity and throughput; colour = category, area =
// time.
struct ComputeRoof {
  std::string label;  // e.g. "matrix_bf16"
  double peak_tflops = 0;
};
struct RooflinePoint {
  std::string label, category;
  double flops_per_byte = 0, tflops = 0, time_us = 0;
};
struct RooflineChart {
  std::string title;
  double peak_bw_tbs = 0;  // memory roof; 0 = none
  std::vector<ComputeRoof> roofs;
  std::vector<RooflinePoint> points;
};

// Kernels per lane (stream) over a time window. Marks: one rect per bar
// overlapping the window; colour = group.
struct TimelineBar {
  std::string lane, name, group;
  double start_us = 0, end_us = 0;
};
struct TimelineChart {
  std::string title;
  std::vector<std::string> lanes;  // top to bottom
  std::vector<TimelineBar> bars;
  double window_start_us = 0, window_end_us = 0;  // absolute trace time
};

// One device's memory over time: allocated and reserved bytes as step lines
// (each sample's totals hold until the next sample), ProfilerStep spans
// shaded behind them, the peak marked and labelled. Marks: one circle at the
// peak (data-x = its time in µs, data-y = its bytes); the series are paths
// of class "series allocated" / "series reserved".
struct MemoryPoint {
  double ts_us = 0, allocated_bytes = 0, reserved_bytes = 0;
};
struct MemoryStepSpan {
  std::string name;
  double start_us = 0, end_us = 0;
};
// An (op, module) group of allocations live at the peak.
struct MemoryHolder {
  std::string op, module;
  size_t allocations = 0;
  double bytes = 0;
};
struct MemoryTimelineChart {
  std::string title;
  std::string device;               // "cuda:0", "cpu"
  std::vector<MemoryPoint> points;  // time order
  double peak_ts_us = 0, peak_bytes = 0;
  std::string peak_label;  // drawn beside the marker, e.g. "peak 96.6 MiB"
  std::vector<MemoryStepSpan> steps;
  // What holds the peak, largest first: listed beside the chart, not drawn.
  std::vector<MemoryHolder> holders;
};

using Chart = std::variant<BarChart, HistogramChart, DistributionChart, InteractionChart,
                           RooflineChart, TimelineChart, MemoryTimelineChart>;

// A chart with the file stem it is saved under and its caption on pages.
struct NamedChart {
  std::string name;     // file stem, e.g. "gpu_timeline" -> gpu_timeline.svg
  std::string caption;  // one sentence under the chart
  Chart chart;
};

std::string to_svg(const BarChart& chart);
std::string to_svg(const HistogramChart& chart);
std::string to_svg(const DistributionChart& chart);
std::string to_svg(const InteractionChart& chart);
std::string to_svg(const RooflineChart& chart);
std::string to_svg(const TimelineChart& chart);
std::string to_svg(const MemoryTimelineChart& chart);
std::string to_svg(const Chart& chart);

// Box statistics as drawn: quartiles by linear interpolation (numpy's
// default), whiskers at the furthest values within 1.5 IQR of the box.
struct BoxStats {
  double min = 0, q1 = 0, median = 0, q3 = 0, max = 0;
  double whisker_low = 0, whisker_high = 0;
  size_t count = 0;
};
BoxStats box_stats(std::vector<double> values);  // finite values only; count 0 when none

}  // namespace jarvis::charts
