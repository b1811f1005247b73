// Horizontal bar charts (grouped or stacked) and histograms.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "charts/charts.h"
#include "charts/svg_common.h"

namespace jarvis::charts {

using namespace detail;

namespace {

constexpr double kRightMargin = 90;  // room for the value printed after a bar

// Largest bar end: the longest bar, or the longest stack.
std::pair<double, double> bar_extent(const BarChart& chart) {
  double lo = 0, hi = 0;
  for (size_t c = 0; c < chart.categories.size(); ++c) {
    double pos = 0, neg = 0;
    for (const auto& s : chart.series) {
      double v = c < s.values.size() ? s.values[c] : NAN;
      if (!std::isfinite(v)) continue;
      if (chart.stacked)
        (v >= 0 ? pos : neg) += v;
      else
        hi = std::max(hi, v), lo = std::min(lo, v);
    }
    hi = std::max(hi, pos), lo = std::min(lo, neg);
  }
  return {lo, hi};
}

void x_axis(Svg& svg, const Ticks& ticks, const LinearScale& x, double top, double bottom,
            const DisplayUnit& unit, std::string_view title) {
  for (double t : ticks.values) {
    svg.line(x(t), top, x(t), bottom, kGrid);
    svg.text(x(t), bottom + 14, tick_label(t, unit), "middle");
  }
  svg.line(x.r0, bottom, x.r1, bottom, kInk);
  svg.text((x.r0 + x.r1) / 2, bottom + 32, axis_title(title, unit), "middle", 12);
}

}  // namespace

std::string to_svg(const BarChart& chart) {
  Svg svg;
  double label_width = 40;
  for (const auto& c : chart.categories) label_width = std::max(label_width, text_width(c));
  label_width = std::min(label_width + 12, 280.0);
  double left = label_width + 10, right = kWidth - kRightMargin;
  std::vector<LegendItem> legend;
  if (chart.series.size() > 1 || chart.stacked)
    for (size_t s = 0; s < chart.series.size(); ++s)
      legend.push_back({palette_colour(s), chart.series[s].name});
  double top = Svg::kTitleHeight + legend_height(legend, kWidth - 20);
  draw_legend(svg, legend, 10, Svg::kTitleHeight - 4, kWidth - 20);

  size_t grouped = chart.stacked ? 1 : std::max<size_t>(1, chart.series.size());
  double band = std::max(22.0, 6 + 12.0 * static_cast<double>(grouped));
  double bottom = top + band * static_cast<double>(std::max<size_t>(1, chart.categories.size()));
  auto [lo, hi] = bar_extent(chart);
  Ticks ticks = linear_ticks(lo, hi);
  DisplayUnit unit = display_unit(chart.unit, std::max(std::fabs(ticks.lo), std::fabs(ticks.hi)));
  LinearScale x{ticks.lo, ticks.hi, left, right};
  svg.open_plot(ticks.lo, ticks.hi, 0, static_cast<double>(chart.categories.size()));
  x_axis(svg, ticks, x, top, bottom, unit, chart.value_label);

  double bar_h = (band - 6) / static_cast<double>(grouped);
  for (size_t c = 0; c < chart.categories.size(); ++c) {
    double y0 = top + band * static_cast<double>(c) + 3;
    svg.text(left - 6, y0 + (band - 6) / 2 + 4, fit_label(chart.categories[c], label_width - 4),
             "end", kFontSize, fmt::format("data-full=\"{}\"", xml_escape(chart.categories[c])));
    double pos = 0, neg = 0;
    for (size_t s = 0; s < chart.series.size(); ++s) {
      double v = c < chart.series[s].values.size() ? chart.series[s].values[c] : NAN;
      if (!std::isfinite(v) || (chart.stacked && v == 0)) continue;
      double start = 0;
      if (chart.stacked) start = v >= 0 ? pos : neg, (v >= 0 ? pos : neg) += v;
      double a = x(start), b = x(start + v);
      double y = chart.stacked ? y0 : y0 + bar_h * static_cast<double>(s);
      std::string tip = fmt::format("{} — {}: {}", chart.categories[c], chart.series[s].name,
                                    format_value(v, chart.unit));
      svg.rect(std::min(a, b), y, std::max(std::fabs(b - a), 0.5), bar_h, palette_colour(s), "mark",
               tip, fmt::format("data-value=\"{}\"", v));
      if (chart.series.size() == 1)
        svg.text(std::max(a, b) + 4, y + bar_h / 2 + 4, format_value(v, chart.unit));
    }
  }
  svg.line(x(0), top, x(0), bottom, kInk);
  svg.close_group();
  return svg.finish(chart.title, bottom + 44);
}

std::string to_svg(const HistogramChart& chart) {
  Svg svg;
  double top = Svg::kTitleHeight + 6, bottom = top + 260, left = 70, right = kWidth - 30;
  double lo = INFINITY, hi = -INFINITY, max_count = 0;
  for (const auto& b : chart.bins) {
    lo = std::min(lo, b.start), hi = std::max(hi, b.end);
    max_count = std::max(max_count, b.count);
  }
  if (chart.bins.empty()) lo = 0, hi = 1;
  Ticks xt = linear_ticks(lo, hi), yt = linear_ticks(0, std::max(1.0, max_count), 5);
  DisplayUnit unit = display_unit(chart.unit, std::max(std::fabs(xt.lo), std::fabs(xt.hi)));
  LinearScale x{xt.lo, xt.hi, left, right}, y{yt.lo, yt.hi, bottom, top};
  svg.open_plot(xt.lo, xt.hi, yt.lo, yt.hi);
  x_axis(svg, xt, x, top, bottom, unit, chart.value_label);
  for (double t : yt.values) {
    svg.line(left, y(t), right, y(t), kGrid);
    svg.text(left - 6, y(t) + 4, fmt::format("{:.4g}", t), "end");
  }
  svg.text(18, (top + bottom) / 2, "Count", "middle", 12,
           fmt::format("transform=\"rotate(-90 18 {})\"", num((top + bottom) / 2)));
  for (const auto& b : chart.bins) {
    std::string tip = fmt::format("{} – {}: {:g}", format_value(b.start, chart.unit),
                                  format_value(b.end, chart.unit), b.count);
    svg.rect(x(b.start), y(b.count), std::max(x(b.end) - x(b.start) - 0.5, 0.5), y(0) - y(b.count),
             palette_colour(0), "mark", tip, fmt::format("data-value=\"{}\"", b.count));
  }
  svg.line(left, bottom, left, top, kInk);
  svg.close_group();
  return svg.finish(chart.title, bottom + 44);
}

}  // namespace jarvis::charts
