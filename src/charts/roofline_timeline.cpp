// Log-log roofline scatter and the per-stream timeline strip.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "charts/charts.h"
#include "charts/svg_common.h"

namespace jarvis::charts {

using namespace detail;

namespace {

bool plottable(const RooflinePoint& p) {
  return std::isfinite(p.flops_per_byte) && std::isfinite(p.tflops) && p.flops_per_byte > 0 &&
         p.tflops > 0;
}

// Categories ordered by total time, largest first (legend and colour order).
std::vector<std::string> categories_by_time(const std::vector<RooflinePoint>& points) {
  std::map<std::string, double> time;
  for (const auto& p : points)
    if (plottable(p)) time[p.category] += std::isfinite(p.time_us) ? p.time_us : 0;
  std::vector<std::pair<std::string, double>> order(time.begin(), time.end());
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> out;
  for (const auto& [name, t] : order) out.push_back(name);
  return out;
}

struct Circle {
  double x, y, r;
};

// Whether a label box [x0, x1] x [y0, y1] touches a circle or leaves the plot.
bool label_clashes(double x0, double x1, double y0, double y1, const std::vector<Circle>& circles,
                   double plot_top, double plot_bottom) {
  if (y0 < plot_top - 1 || y1 > plot_bottom) return true;
  for (const Circle& c : circles) {
    double nx = std::clamp(c.x, x0, x1), ny = std::clamp(c.y, y0, y1);
    if ((nx - c.x) * (nx - c.x) + (ny - c.y) * (ny - c.y) <= (c.r + 2) * (c.r + 2)) return true;
  }
  return false;
}

// A roof's label: above its line at the right end, else below it, else at
// the left end (above, then below), wherever no circle sits; class
// roof-label (the browser test checks it clears the circles).
void roof_label(Svg& svg, const std::string& label, double x_left, double x_right, double line_y,
                const std::vector<Circle>& circles, double plot_top, double plot_bottom,
                double size) {
  const double w = text_width(label, size) + 4;
  const double left_x = std::min(x_left + 4, x_right - w);
  const std::pair<double, double> tries[] = {{x_right - 4 - w, line_y - 5},
                                             {x_right - 4 - w, line_y + size + 3},
                                             {left_x, line_y - 5},
                                             {left_x, line_y + size + 3}};
  std::pair<double, double> at = tries[0];
  for (const auto& t : tries)
    if (!label_clashes(t.first, t.first + w, t.second - size, t.second + 2, circles, plot_top,
                       plot_bottom)) {
      at = t;
      break;
    }
  svg.text(at.first + 2, at.second, label, "start", size,
           "class=\"roof-label\" font-style=\"italic\"");
}

void draw_roofs(Svg& svg, const RooflineChart& chart, const LogScale& x, const LogScale& y,
                const std::vector<Circle>& circles) {
  double top_peak = 0;
  for (const auto& r : chart.roofs) top_peak = std::max(top_peak, r.peak_tflops);
  const double plot_top = y(y.d1), plot_bottom = y(y.d0);
  double bw = chart.peak_bw_tbs;
  if (bw > 0) {
    // The memory roof from where it enters the plot up to the highest ridge.
    double x_start = std::max(x.d0, y.d0 / bw);
    double x_end = top_peak > 0 ? std::min(x.d1, top_peak / bw) : x.d1;
    svg.line(x(x_start), y(bw * x_start), x(x_end), y(std::min(y.d1, bw * x_end)), "#555555", 2,
             "roof");
    // Beside the line's start, above it when free, else below.
    std::string label = fmt::format("{:.3g} TB/s", bw);
    double lx = x(x_start) + 6, ly = y(bw * x_start) - 8, w = text_width(label) + 4;
    if (label_clashes(lx, lx + w, ly - kFontSize, ly + 2, circles, plot_top, plot_bottom))
      ly = y(bw * x_start) + kFontSize + 10;
    svg.text(lx, ly, label, "start", kFontSize, "class=\"roof-label\" font-style=\"italic\"");
  }
  for (const auto& r : chart.roofs) {
    if (!(r.peak_tflops > 0)) continue;
    double ridge = bw > 0 ? std::max(x.d0, r.peak_tflops / bw) : x.d0;
    svg.line(x(ridge), y(r.peak_tflops), x(x.d1), y(r.peak_tflops), "#555555", 1.5, "roof", "6 3");
    roof_label(svg, fmt::format("{} {:.4g} TFLOPS/s", r.label, r.peak_tflops), x(ridge), x(x.d1),
               y(r.peak_tflops), circles, plot_top, plot_bottom, 10);
  }
}

}  // namespace

std::string to_svg(const RooflineChart& chart) {
  Svg svg;
  std::vector<std::string> categories = categories_by_time(chart.points);
  std::vector<LegendItem> legend;
  for (size_t i = 0; i < categories.size(); ++i)
    legend.push_back({palette_colour(i), categories[i]});
  double top = Svg::kTitleHeight + legend_height(legend, kWidth - 20) + 6;
  draw_legend(svg, legend, 10, Svg::kTitleHeight - 4, kWidth - 20);
  double bottom = top + 380, left = 80, right = kWidth - 20;

  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY, t_max = 0;
  for (const auto& p : chart.points) {
    if (!plottable(p)) continue;
    x_lo = std::min(x_lo, p.flops_per_byte), x_hi = std::max(x_hi, p.flops_per_byte);
    y_lo = std::min(y_lo, p.tflops), y_hi = std::max(y_hi, p.tflops);
    if (std::isfinite(p.time_us)) t_max = std::max(t_max, p.time_us);
  }
  for (const auto& r : chart.roofs) {
    if (!(r.peak_tflops > 0)) continue;
    y_hi = std::max(y_hi, r.peak_tflops), y_lo = std::min(y_lo, r.peak_tflops);
    if (chart.peak_bw_tbs > 0) {
      double ridge = r.peak_tflops / chart.peak_bw_tbs;
      x_lo = std::min(x_lo, ridge), x_hi = std::max(x_hi, ridge);
    }
  }
  if (!std::isfinite(x_lo)) x_lo = 0.1, x_hi = 1000;
  if (!std::isfinite(y_lo)) y_lo = 0.01, y_hi = 1000;
  Ticks xt = log_ticks(x_lo, x_hi), yt = log_ticks(y_lo, y_hi);
  LogScale x{xt.lo, xt.hi, left, right}, y{yt.lo, yt.hi, bottom, top};
  svg.open_plot(xt.lo, xt.hi, yt.lo, yt.hi);
  for (double t : xt.values) {
    svg.line(x(t), top, x(t), bottom, kGrid);
    svg.text(x(t), bottom + 14, fmt::format("{:g}", t), "middle");
  }
  for (double t : yt.values) {
    svg.line(left, y(t), right, y(t), kGrid);
    svg.text(left - 6, y(t) + 4, fmt::format("{:g}", t), "end");
  }
  svg.line(left, bottom, right, bottom, kInk);
  svg.line(left, top, left, bottom, kInk);
  svg.text((left + right) / 2, bottom + 32, "Arithmetic intensity (FLOP/byte, log scale)", "middle",
           12);
  double mid = (top + bottom) / 2;
  svg.text(18, mid, "Achieved throughput (TFLOPS/s, log scale)", "middle", 12,
           fmt::format("transform=\"rotate(-90 18 {})\"", num(mid)));
  std::vector<const RooflinePoint*> order;
  for (const auto& p : chart.points)
    if (plottable(p)) order.push_back(&p);
  auto radius = [&](const RooflinePoint* p) {
    double share = t_max > 0 && std::isfinite(p->time_us) ? p->time_us / t_max : 0;
    return 3 + 9 * std::sqrt(std::max(0.0, share));
  };
  std::vector<Circle> circles;
  for (const RooflinePoint* p : order)
    circles.push_back({x(p->flops_per_byte), y(p->tflops), radius(p)});
  draw_roofs(svg, chart, x, y, circles);

  // Large circles first so small ones stay visible on top.
  std::stable_sort(order.begin(), order.end(),
                   [](auto* a, auto* b) { return a->time_us > b->time_us; });
  for (const RooflinePoint* p : order) {
    size_t colour = static_cast<size_t>(
        std::find(categories.begin(), categories.end(), p->category) - categories.begin());
    double share = t_max > 0 && std::isfinite(p->time_us) ? p->time_us / t_max : 0;
    std::string tip =
        fmt::format("{} [{}]: {:.3g} FLOP/byte, {:.3g} TFLOPS/s, {}", p->label, p->category,
                    p->flops_per_byte, p->tflops, format_value(p->time_us, Unit::Microseconds));
    svg.circle(x(p->flops_per_byte), y(p->tflops), 3 + 9 * std::sqrt(std::max(0.0, share)),
               palette_colour(colour), "mark", tip,
               fmt::format("fill-opacity=\"0.7\" stroke=\"#ffffff\" data-x=\"{}\" data-y=\"{}\"",
                           p->flops_per_byte, p->tflops));
  }
  svg.close_group();
  svg.text(kWidth - 20, bottom + 32, "circle area ∝ kernel time", "end", 10);
  return svg.finish(chart.title, bottom + 44);
}

std::string to_svg(const TimelineChart& chart) {
  Svg svg;
  std::vector<std::string> groups;
  for (const auto& b : chart.bars)
    if (std::find(groups.begin(), groups.end(), b.group) == groups.end()) groups.push_back(b.group);
  std::vector<LegendItem> legend;
  for (size_t i = 0; i < groups.size(); ++i) legend.push_back({palette_colour(i), groups[i]});
  double top = Svg::kTitleHeight + legend_height(legend, kWidth - 20) + 6;
  draw_legend(svg, legend, 10, Svg::kTitleHeight - 4, kWidth - 20);
  constexpr double kLane = 20;
  double left = 110, right = kWidth - 20;
  double bottom = top + kLane * static_cast<double>(std::max<size_t>(1, chart.lanes.size()));
  double span = std::max(chart.window_end_us - chart.window_start_us, 1e-9);
  Ticks ticks = linear_ticks(0, span);
  DisplayUnit unit = display_unit(Unit::Microseconds, ticks.hi);
  LinearScale x{ticks.lo, ticks.hi, left, right};
  svg.open_plot(chart.window_start_us + ticks.lo, chart.window_start_us + ticks.hi, 0,
                static_cast<double>(chart.lanes.size()));
  for (double t : ticks.values) {
    svg.line(x(t), top, x(t), bottom, kGrid);
    svg.text(x(t), bottom + 14, tick_label(t, unit), "middle");
  }
  svg.line(left, bottom, right, bottom, kInk);
  svg.text((left + right) / 2, bottom + 32, axis_title("Time since window start", unit), "middle",
           12);
  for (size_t l = 0; l < chart.lanes.size(); ++l)
    svg.text(left - 6, top + kLane * static_cast<double>(l) + 14, fit_label(chart.lanes[l], 100),
             "end");
  for (const auto& b : chart.bars) {
    size_t lane = static_cast<size_t>(std::find(chart.lanes.begin(), chart.lanes.end(), b.lane) -
                                      chart.lanes.begin());
    if (lane >= chart.lanes.size() || b.end_us < chart.window_start_us ||
        b.start_us > chart.window_end_us)
      continue;
    double a = x(std::max(b.start_us, chart.window_start_us) - chart.window_start_us);
    double e = x(std::min(b.end_us, chart.window_end_us) - chart.window_start_us);
    size_t colour =
        static_cast<size_t>(std::find(groups.begin(), groups.end(), b.group) - groups.begin());
    svg.rect(a, top + kLane * static_cast<double>(lane) + 3, std::max(e - a, 0.5), kLane - 6,
             palette_colour(colour), "mark",
             fmt::format("{} ({}), {}", b.name, b.group,
                         format_value(b.end_us - b.start_us, Unit::Microseconds)),
             fmt::format("data-start=\"{}\" data-end=\"{}\"", b.start_us, b.end_us));
  }
  svg.close_group();
  return svg.finish(chart.title, bottom + 44);
}

std::string to_svg(const Chart& chart) {
  return std::visit([](const auto& c) { return to_svg(c); }, chart);
}

}  // namespace jarvis::charts
