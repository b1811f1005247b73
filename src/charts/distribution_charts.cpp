// Box, violin and interaction plots: a value against the levels of one or
// two fields (the sweep variance plots of the GEMM visualisation notes).
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "charts/charts.h"
#include "charts/svg_common.h"

namespace jarvis::charts {

using namespace detail;

namespace {

constexpr double kPlotHeight = 300;
constexpr double kLeft = 80, kRight = kWidth - 20;

double quantile(const std::vector<double>& sorted, double q) {
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t i = static_cast<size_t>(std::floor(pos));
  if (i + 1 >= sorted.size()) return sorted.back();
  return sorted[i] + (pos - static_cast<double>(i)) * (sorted[i + 1] - sorted[i]);
}

std::vector<double> finite_sorted(const std::vector<double>& values) {
  std::vector<double> out;
  for (double v : values)
    if (std::isfinite(v)) out.push_back(v);
  std::sort(out.begin(), out.end());
  return out;
}

void value_axis(Svg& svg, const Ticks& ticks, const LinearScale& y, const DisplayUnit& unit,
                std::string_view title, double top, double bottom) {
  for (double t : ticks.values) {
    svg.line(kLeft, y(t), kRight, y(t), kGrid);
    svg.text(kLeft - 6, y(t) + 4, tick_label(t, unit), "end");
  }
  svg.line(kLeft, top, kLeft, bottom, kInk);
  svg.line(kLeft, bottom, kRight, bottom, kInk);
  double mid = (top + bottom) / 2;
  svg.text(18, mid, axis_title(title, unit), "middle", 12,
           fmt::format("transform=\"rotate(-90 18 {})\"", num(mid)));
}

// Category positions along x: equal slots, labels shortened to their slot.
void level_axis(Svg& svg, const std::vector<std::string>& levels, std::string_view title,
                double bottom) {
  double slot = (kRight - kLeft) / static_cast<double>(std::max<size_t>(1, levels.size()));
  for (size_t i = 0; i < levels.size(); ++i)
    svg.text(kLeft + slot * (static_cast<double>(i) + 0.5), bottom + 14,
             fit_label(levels[i], slot - 4), "middle");
  svg.text((kLeft + kRight) / 2, bottom + 32, std::string(title), "middle", 12);
}

// Gaussian kernel density at `at`, Silverman's bandwidth.
std::vector<double> density(const std::vector<double>& sorted, const std::vector<double>& at) {
  double n = static_cast<double>(sorted.size());
  double mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / n;
  double var = 0;
  for (double v : sorted) var += (v - mean) * (v - mean);
  double sd = n > 1 ? std::sqrt(var / (n - 1)) : 0;
  double iqr = quantile(sorted, 0.75) - quantile(sorted, 0.25);
  double spread = iqr > 0 ? std::min(sd, iqr / 1.34) : sd;
  double bw = 0.9 * spread * std::pow(n, -0.2);
  if (!(bw > 0)) bw = std::max(std::fabs(mean) * 0.01, 1e-12);
  std::vector<double> out;
  for (double x : at) {
    double sum = 0;
    for (double v : sorted) sum += std::exp(-0.5 * (x - v) * (x - v) / (bw * bw));
    out.push_back(sum / (n * bw * std::sqrt(2 * M_PI)));
  }
  return out;
}

void draw_box(Svg& svg, const BoxStats& s, const std::vector<double>& sorted, double cx,
              double half, const LinearScale& y, const std::string& colour,
              const std::string& tip) {
  svg.line(cx, y(s.whisker_low), cx, y(s.q1), kInk);
  svg.line(cx, y(s.q3), cx, y(s.whisker_high), kInk);
  svg.line(cx - half / 2, y(s.whisker_low), cx + half / 2, y(s.whisker_low), kInk);
  svg.line(cx - half / 2, y(s.whisker_high), cx + half / 2, y(s.whisker_high), kInk);
  svg.rect(cx - half, y(s.q3), 2 * half, std::max(y(s.q1) - y(s.q3), 1.0), colour, "mark", tip,
           fmt::format("fill-opacity=\"0.75\" stroke=\"{}\" data-median=\"{}\"", kInk, s.median));
  svg.line(cx - half, y(s.median), cx + half, y(s.median), kInk, 2);
  for (double v : sorted)
    if (v < s.whisker_low || v > s.whisker_high)
      svg.circle(cx, y(v), 2.5, "none", "outlier", "", fmt::format("stroke=\"{}\"", kInk));
}

void draw_violin(Svg& svg, const BoxStats& s, const std::vector<double>& sorted, double cx,
                 double half, double peak, const LinearScale& y, const std::string& colour,
                 const std::string& tip) {
  std::vector<double> at;
  constexpr int kSamples = 48;
  for (int i = 0; i <= kSamples; ++i) at.push_back(s.min + (s.max - s.min) * i / kSamples);
  std::vector<double> d = density(sorted, at);
  std::string right_side, left_side;
  for (size_t i = 0; i < at.size(); ++i) {
    double w = s.max > s.min ? half * d[i] / peak : half;
    right_side += fmt::format("{}{},{} ", i == 0 ? "M" : "L", num(cx + w), num(y(at[i])));
    left_side = fmt::format("L{},{} ", num(cx - w), num(y(at[i]))) + left_side;
  }
  if (s.max == s.min)  // a single value: a flat bar at that value
    right_side = fmt::format("M{},{} L{},{} L{},{} L{},{} ", num(cx - half), num(y(s.min) - 1),
                             num(cx + half), num(y(s.min) - 1), num(cx + half), num(y(s.min) + 1),
                             num(cx - half), num(y(s.min) + 1)),
    left_side.clear();
  svg.path(right_side + left_side + "Z", colour, kInk, "mark", tip,
           fmt::format("fill-opacity=\"0.75\" data-median=\"{}\"", s.median));
  svg.line(cx, y(s.q1), cx, y(s.q3), kInk, 3);
  svg.circle(cx, y(s.median), 3, "#ffffff", "", "", fmt::format("stroke=\"{}\"", kInk));
}

double peak_density(const std::vector<DistributionGroup>& groups) {
  double peak = 0;
  for (const auto& g : groups) {
    auto sorted = finite_sorted(g.values);
    if (sorted.size() < 2 || sorted.front() == sorted.back()) continue;
    std::vector<double> at;
    for (int i = 0; i <= 48; ++i)
      at.push_back(sorted.front() + (sorted.back() - sorted.front()) * i / 48);
    auto d = density(sorted, at);
    peak = std::max(peak, *std::max_element(d.begin(), d.end()));
  }
  return peak > 0 ? peak : 1;
}

}  // namespace

BoxStats box_stats(std::vector<double> values) {
  std::vector<double> sorted = finite_sorted(values);
  BoxStats s;
  s.count = sorted.size();
  if (sorted.empty()) return s;
  s.min = sorted.front(), s.max = sorted.back();
  s.q1 = quantile(sorted, 0.25), s.median = quantile(sorted, 0.5), s.q3 = quantile(sorted, 0.75);
  double reach = 1.5 * (s.q3 - s.q1);
  s.whisker_low = s.q1, s.whisker_high = s.q3;
  for (double v : sorted)
    if (v >= s.q1 - reach) {
      s.whisker_low = std::min(v, s.q1);
      break;
    }
  for (auto it = sorted.rbegin(); it != sorted.rend(); ++it)
    if (*it <= s.q3 + reach) {
      s.whisker_high = std::max(*it, s.q3);
      break;
    }
  return s;
}

std::string to_svg(const DistributionChart& chart) {
  Svg svg;
  double top = Svg::kTitleHeight + 6, bottom = top + kPlotHeight;
  std::vector<double> all;
  std::vector<std::string> levels;
  for (const auto& g : chart.groups) {
    all.insert(all.end(), g.values.begin(), g.values.end());
    levels.push_back(g.label);
  }
  auto [lo, hi] = finite_range(all);
  Ticks ticks = linear_ticks(lo, hi, 6);
  DisplayUnit unit = display_unit(chart.unit, std::max(std::fabs(ticks.lo), std::fabs(ticks.hi)));
  LinearScale y{ticks.lo, ticks.hi, bottom, top};
  svg.open_plot(0, static_cast<double>(levels.size()), ticks.lo, ticks.hi);
  value_axis(svg, ticks, y, unit, chart.value_label, top, bottom);
  level_axis(svg, levels, chart.field_label, bottom);
  double slot = (kRight - kLeft) / static_cast<double>(std::max<size_t>(1, levels.size()));
  double half = std::min(slot * 0.35, 60.0);
  double peak = peak_density(chart.groups);
  for (size_t i = 0; i < chart.groups.size(); ++i) {
    auto sorted = finite_sorted(chart.groups[i].values);
    if (sorted.empty()) continue;
    BoxStats s = box_stats(sorted);
    double cx = kLeft + slot * (static_cast<double>(i) + 0.5);
    std::string tip =
        fmt::format("{} = {}: n={}, median {}, IQR {} – {}", chart.field_label,
                    chart.groups[i].label, s.count, format_value(s.median, chart.unit),
                    format_value(s.q1, chart.unit), format_value(s.q3, chart.unit));
    if (chart.kind == DistributionKind::Box)
      draw_box(svg, s, sorted, cx, half, y, palette_colour(i), tip);
    else
      draw_violin(svg, s, sorted, cx, half, peak, y, palette_colour(i), tip);
  }
  svg.close_group();
  return svg.finish(chart.title, bottom + 44);
}

std::string to_svg(const InteractionChart& chart) {
  Svg svg;
  std::vector<LegendItem> legend;
  for (size_t l = 0; l < chart.lines.size(); ++l)
    legend.push_back({palette_colour(l), chart.line_label + " = " + chart.lines[l].label});
  double top = Svg::kTitleHeight + legend_height(legend, kWidth - 20) + 6;
  draw_legend(svg, legend, 10, Svg::kTitleHeight - 4, kWidth - 20);
  double bottom = top + kPlotHeight;
  std::vector<double> all;
  for (const auto& line : chart.lines) all.insert(all.end(), line.means.begin(), line.means.end());
  auto [lo, hi] = finite_range(all);
  Ticks ticks = linear_ticks(lo, hi, 6);
  DisplayUnit unit = display_unit(chart.unit, std::max(std::fabs(ticks.lo), std::fabs(ticks.hi)));
  LinearScale y{ticks.lo, ticks.hi, bottom, top};
  svg.open_plot(0, static_cast<double>(chart.x_levels.size()), ticks.lo, ticks.hi);
  value_axis(svg, ticks, y, unit, "Mean " + chart.value_label, top, bottom);
  level_axis(svg, chart.x_levels, chart.x_label, bottom);
  double slot = (kRight - kLeft) / static_cast<double>(std::max<size_t>(1, chart.x_levels.size()));
  for (size_t l = 0; l < chart.lines.size(); ++l) {
    const auto& line = chart.lines[l];
    std::string d;
    for (size_t i = 0; i < line.means.size() && i < chart.x_levels.size(); ++i) {
      if (!std::isfinite(line.means[i])) continue;
      double cx = kLeft + slot * (static_cast<double>(i) + 0.5);
      d += fmt::format("{}{},{} ", d.empty() ? "M" : "L", num(cx), num(y(line.means[i])));
    }
    if (!d.empty())
      svg.path(d, "none", palette_colour(l), "series", "",
               "stroke-width=\"2\"" + std::string(l % 2 ? " stroke-dasharray=\"6 3\"" : ""));
    for (size_t i = 0; i < line.means.size() && i < chart.x_levels.size(); ++i) {
      if (!std::isfinite(line.means[i])) continue;
      double cx = kLeft + slot * (static_cast<double>(i) + 0.5);
      svg.circle(
          cx, y(line.means[i]), 4, palette_colour(l), "mark",
          fmt::format("{} = {}, {} = {}: mean {}", chart.line_label, line.label, chart.x_label,
                      chart.x_levels[i], format_value(line.means[i], chart.unit)),
          fmt::format("data-value=\"{}\"", line.means[i]));
    }
  }
  svg.close_group();
  return svg.finish(chart.title, bottom + 44);
}

}  // namespace jarvis::charts
