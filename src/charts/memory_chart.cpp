// The memory timeline chart: allocated and reserved bytes of one device over
// time, ProfilerStep spans behind them, the peak marked.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "charts/charts.h"
#include "charts/svg_common.h"

namespace jarvis::charts {

using namespace detail;

namespace {

constexpr double kPlotHeight = 260;
constexpr const char* kAllocatedColour = "#0072B2";
constexpr const char* kReservedColour = "#E69F00";

// A step line through the points: the allocator's totals after a sample hold
// until the next sample, so each value runs flat and jumps at the next time.
std::string step_path(const std::vector<MemoryPoint>& points, const LinearScale& x,
                      const LinearScale& y, double t0, bool reserved) {
  std::string d;
  for (size_t i = 0; i < points.size(); ++i) {
    double v = reserved ? points[i].reserved_bytes : points[i].allocated_bytes;
    double px = x(points[i].ts_us - t0), py = y(v);
    d += i == 0 ? fmt::format("M{} {}", num(px), num(py)) : fmt::format("H{}V{}", num(px), num(py));
  }
  return d;
}

// The area under the allocated line, down to the x axis.
std::string area_path(const std::string& line, const LinearScale& x,
                      const std::vector<MemoryPoint>& points, double t0, double bottom) {
  return line + fmt::format("V{}H{}Z", num(bottom), num(x(points.front().ts_us - t0)));
}

// Shaded spans (every other step darker) with the step's name on top.
void draw_steps(Svg& svg, const MemoryTimelineChart& chart, const LinearScale& x, double t0,
                double top, double bottom) {
  for (size_t i = 0; i < chart.steps.size(); ++i) {
    const MemoryStepSpan& s = chart.steps[i];
    double a = std::clamp(x(s.start_us - t0), x.r0, x.r1);
    double e = std::clamp(x(s.end_us - t0), x.r0, x.r1);
    if (e <= a) continue;
    svg.rect(a, top, e - a, bottom - top, i % 2 ? "#ececec" : "#f6f6f6", "step", s.name,
             fmt::format("data-start=\"{}\" data-end=\"{}\"", s.start_us, s.end_us));
    svg.line(a, top, a, bottom, "#bbbbbb", 1, "step-boundary", "2,3");
    if (e - a > 40) svg.text((a + e) / 2, top + 11, fit_label(s.name, e - a - 4, 9), "middle", 9);
  }
}

void draw_axes(Svg& svg, const Ticks& xt, const DisplayUnit& xu, const LinearScale& x,
               const Ticks& yt, const DisplayUnit& yu, const LinearScale& y, double top,
               double bottom) {
  for (double t : xt.values) svg.text(x(t), bottom + 14, tick_label(t, xu), "middle");
  for (double t : yt.values) {
    svg.line(x.r0, y(t * yu.divisor), x.r1, y(t * yu.divisor), kGrid);
    svg.text(x.r0 - 6, y(t * yu.divisor) + 4, fmt::format("{:.4g}", t), "end");
  }
  svg.line(x.r0, bottom, x.r1, bottom, kInk);
  svg.line(x.r0, top, x.r0, bottom, kInk);
  svg.text((x.r0 + x.r1) / 2, bottom + 32, axis_title("Time since the first sample", xu), "middle",
           12);
  double mid = (top + bottom) / 2;
  svg.text(16, mid, axis_title("Memory", yu), "middle", 12,
           fmt::format("transform=\"rotate(-90 16 {})\"", num(mid)));
}

// The marker: a dashed line down to the axis, a circle, and the label on the
// side with room.
void draw_peak(Svg& svg, const MemoryTimelineChart& chart, const LinearScale& x,
               const LinearScale& y, double t0, double bottom) {
  double px = x(chart.peak_ts_us - t0), py = y(chart.peak_bytes);
  svg.line(px, py, px, bottom, "#D55E00", 1, "peak-line", "4,3");
  svg.circle(px, py, 5, "#D55E00", "mark peak", chart.peak_label,
             fmt::format("stroke=\"#ffffff\" data-x=\"{}\" data-y=\"{}\"", chart.peak_ts_us,
                         chart.peak_bytes));
  bool left_side = px > (x.r0 + x.r1) / 2;
  svg.text(left_side ? px - 9 : px + 9, std::max(py - 6, 12.0 + Svg::kTitleHeight),
           chart.peak_label, left_side ? "end" : "start", 11,
           "class=\"peak-label\" font-weight=\"bold\" fill=\"#D55E00\"");
}

}  // namespace

std::string to_svg(const MemoryTimelineChart& chart) {
  Svg svg;
  std::vector<LegendItem> legend = {{kAllocatedColour, "allocated"},
                                    {kReservedColour, "reserved (allocator cache)"}};
  if (!chart.steps.empty()) legend.push_back({"#e3e3e3", "ProfilerStep spans"});
  double top = Svg::kTitleHeight + legend_height(legend, kWidth - 20) + 8;
  draw_legend(svg, legend, 10, Svg::kTitleHeight - 4, kWidth - 20);
  double left = 70, right = kWidth - 20, bottom = top + kPlotHeight;
  double t0 = chart.points.empty() ? chart.peak_ts_us : chart.points.front().ts_us;
  double t1 = chart.points.empty() ? t0 : chart.points.back().ts_us;
  double y_max = chart.peak_bytes;
  for (const MemoryPoint& p : chart.points)
    y_max = std::max({y_max, p.allocated_bytes, p.reserved_bytes});
  Ticks xt = linear_ticks(0, std::max(t1 - t0, 1e-3));
  DisplayUnit xu = display_unit(Unit::Microseconds, xt.hi);
  // Ticks in the display unit, so they fall on round MiB / GiB.
  DisplayUnit yu = display_unit(Unit::Bytes, y_max);
  Ticks yt = linear_ticks(0, std::max(y_max, 1.0) / yu.divisor, 5);
  LinearScale x{xt.lo, xt.hi, left, right};
  LinearScale y{yt.lo * yu.divisor, yt.hi * yu.divisor, bottom, top};
  svg.open_plot(t0 + xt.lo, t0 + xt.hi, yt.lo * yu.divisor, yt.hi * yu.divisor);
  draw_steps(svg, chart, x, t0, top, bottom);
  draw_axes(svg, xt, xu, x, yt, yu, y, top, bottom);
  if (!chart.points.empty()) {
    std::string allocated = step_path(chart.points, x, y, t0, false);
    svg.path(area_path(allocated, x, chart.points, t0, bottom), kAllocatedColour, "none",
             "allocated-area", "", "fill-opacity=\"0.15\"");
    svg.path(step_path(chart.points, x, y, t0, true), "none", kReservedColour, "series reserved",
             "reserved bytes",
             fmt::format("stroke-width=\"1.5\" data-points=\"{}\"", chart.points.size()));
    svg.path(allocated, "none", kAllocatedColour, "series allocated", "allocated bytes",
             fmt::format("stroke-width=\"1.5\" data-points=\"{}\"", chart.points.size()));
  }
  draw_peak(svg, chart, x, y, t0, bottom);
  svg.close_group();
  return svg.finish(chart.title, bottom + 44);
}

}  // namespace jarvis::charts
