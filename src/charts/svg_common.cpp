#include "charts/svg_common.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "base/utf8.h"

namespace jarvis::charts {

DisplayUnit display_unit(Unit unit, double max_abs_value) {
  switch (unit) {
    case Unit::Microseconds:
      if (max_abs_value >= 1e6) return {1e6, "s"};
      if (max_abs_value >= 1e3) return {1e3, "ms"};
      return {1, "µs"};
    case Unit::Percent:
      return {1, "%"};
    case Unit::TflopsPerSec:
      return {1, "TFLOPS/s"};
    case Unit::TbPerSec:
      return {1, "TB/s"};
    case Unit::FlopsPerByte:
      return {1, "FLOP/byte"};
    case Unit::Bytes:
      if (max_abs_value >= 0x1p30) return {0x1p30, "GiB"};
      if (max_abs_value >= 0x1p20) return {0x1p20, "MiB"};
      if (max_abs_value >= 0x1p10) return {0x1p10, "KiB"};
      return {1, "B"};
    case Unit::Count:
    case Unit::None:
      break;
  }
  return {1, ""};
}

std::string format_value(double value, Unit unit) {
  if (!std::isfinite(value)) return "n/a";
  DisplayUnit d = display_unit(unit, std::fabs(value));
  std::string number = fmt::format("{:.3g}", value / d.divisor);
  return d.suffix.empty() ? number : number + " " + d.suffix;
}

const std::string& palette_colour(size_t index) {
  // Okabe & Ito (2008), ordered so neighbouring series differ most.
  static const std::array<std::string, 8> colours = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                                     "#56B4E9", "#CC79A7", "#F0E442", "#000000"};
  return colours[index % colours.size()];
}

namespace detail {

std::string xml_escape(std::string_view raw) {
  // XML and HTML are UTF-8 here: a byte that starts no valid sequence (a
  // trace file named with one, issue 74 point 9) becomes U+FFFD.
  const std::string repaired = valid_utf8(raw);
  const std::string_view text = repaired;
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        // Control characters are not allowed in XML 1.0 text.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
          out += ' ';
        else
          out += c;
    }
  }
  return out;
}

std::string num(double v) {
  if (!std::isfinite(v)) v = 0;
  std::string s = fmt::format("{:.2f}", v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

namespace {
size_t code_points(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}
}  // namespace

double text_width(std::string_view text, double font_size) {
  return static_cast<double>(code_points(text)) * font_size * 0.6;
}

std::string fit_label(std::string_view text, double max_width, double font_size) {
  if (text_width(text, font_size) <= max_width) return std::string(text);
  size_t keep = static_cast<size_t>(std::max(1.0, max_width / (font_size * 0.6) - 1));
  std::string out;
  size_t points = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    bool starts_point = (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
    if (starts_point && points++ == keep) break;
    out += text[i];
  }
  return out + "…";
}

namespace {
std::string attr(std::string_view name, std::string_view value) {
  if (value.empty()) return "";
  return fmt::format(" {}=\"{}\"", name, xml_escape(value));
}
std::string tooltip_element(std::string_view tooltip) {
  return tooltip.empty() ? "" : "<title>" + xml_escape(tooltip) + "</title>";
}
}  // namespace

void Svg::rect(double x, double y, double w, double h, std::string_view fill, std::string_view cls,
               std::string_view tooltip, std::string_view extra) {
  std::string tip = tooltip_element(tooltip);
  body_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}{}{}",
                       num(x), num(y), num(std::max(0.0, w)), num(std::max(0.0, h)), fill,
                       attr("class", cls), extra.empty() ? "" : " ", extra);
  body_ += tip.empty() ? "/>\n" : ">" + tip + "</rect>\n";
}

void Svg::line(double x1, double y1, double x2, double y2, std::string_view stroke, double width,
               std::string_view cls, std::string_view dash) {
  body_ += fmt::format(
      "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{}{}/>\n",
      num(x1), num(y1), num(x2), num(y2), stroke, num(width), attr("class", cls),
      attr("stroke-dasharray", dash));
}

void Svg::text(double x, double y, std::string_view content, std::string_view anchor, double size,
               std::string_view extra) {
  body_ += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"{}\"{}{}>{}</text>\n", num(x), num(y),
      num(size), anchor, extra.empty() ? "" : " ", extra, xml_escape(content));
}

void Svg::circle(double cx, double cy, double r, std::string_view fill, std::string_view cls,
                 std::string_view tooltip, std::string_view extra) {
  std::string tip = tooltip_element(tooltip);
  body_ += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"{}{}{}", num(cx), num(cy),
                       num(r), fill, attr("class", cls), extra.empty() ? "" : " ", extra);
  body_ += tip.empty() ? "/>\n" : ">" + tip + "</circle>\n";
}

void Svg::path(std::string_view d, std::string_view fill, std::string_view stroke,
               std::string_view cls, std::string_view tooltip, std::string_view extra) {
  std::string tip = tooltip_element(tooltip);
  body_ += fmt::format("<path d=\"{}\" fill=\"{}\" stroke=\"{}\"{}{}{}", d, fill, stroke,
                       attr("class", cls), extra.empty() ? "" : " ", extra);
  body_ += tip.empty() ? "/>\n" : ">" + tip + "</path>\n";
}

void Svg::open_plot(double x_min, double x_max, double y_min, double y_max) {
  body_ += fmt::format(
      "<g class=\"plot\" data-x-min=\"{}\" data-x-max=\"{}\" data-y-min=\"{}\" "
      "data-y-max=\"{}\">\n",
      x_min, x_max, y_min, y_max);
}

std::string Svg::finish(std::string_view title, double height) const {
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"Helvetica, Arial, sans-serif\" fill=\"{2}\" role=\"img\">\n",
      num(kWidth), num(height), kInk);
  out += "<title>" + xml_escape(title) + "</title>\n";
  out += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", num(kWidth),
                     num(height));
  out += fmt::format(
      "<text x=\"{}\" y=\"22\" font-size=\"15\" font-weight=\"bold\" "
      "text-anchor=\"middle\">{}</text>\n",
      num(kWidth / 2), xml_escape(fit_label(title, kWidth - 20, 15)));
  out += body_;
  out += "</svg>\n";
  return out;
}

double LinearScale::operator()(double v) const {
  if (d1 == d0) return (r0 + r1) / 2;
  return r0 + (v - d0) / (d1 - d0) * (r1 - r0);
}

double LogScale::operator()(double v) const {
  double l0 = std::log10(d0), l1 = std::log10(d1);
  if (l1 == l0 || v <= 0) return r0;
  return r0 + (std::log10(v) - l0) / (l1 - l0) * (r1 - r0);
}

Ticks linear_ticks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi) lo = 0, hi = 1;
  if (lo == hi) {
    double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad, hi += pad;
  }
  double raw = (hi - lo) / std::max(1, target - 1);
  double magnitude = std::pow(10, std::floor(std::log10(raw)));
  double step = magnitude * 10;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  Ticks t;
  t.lo = std::floor(lo / step) * step;
  t.hi = std::ceil(hi / step) * step;
  for (double v = t.lo; v <= t.hi + step * 1e-9; v += step)
    t.values.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return t;
}

Ticks log_ticks(double lo, double hi) {
  if (!(lo > 0) || !(hi > 0) || lo > hi) lo = 1, hi = 10;
  int e0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int e1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (e1 <= e0) e1 = e0 + 1;
  Ticks t;
  t.lo = std::pow(10, e0);
  t.hi = std::pow(10, e1);
  for (int e = e0; e <= e1; ++e) t.values.push_back(std::pow(10, e));
  return t;
}

std::string tick_label(double value, const DisplayUnit& unit) {
  return fmt::format("{:.4g}", value / unit.divisor);
}

std::string axis_title(std::string_view label, const DisplayUnit& unit) {
  if (unit.suffix.empty()) return std::string(label);
  return fmt::format("{} ({})", label, unit.suffix);
}

namespace {
constexpr double kLegendRow = 18;
double item_width(const LegendItem& item) {
  return 16 + text_width(item.label) + 14;
}
}  // namespace

double legend_height(const std::vector<LegendItem>& items, double max_width) {
  if (items.empty()) return 0;
  double x = 0, rows = 1;
  for (const auto& item : items) {
    double w = std::min(item_width(item), max_width);
    if (x > 0 && x + w > max_width) x = 0, ++rows;
    x += w;
  }
  return rows * kLegendRow;
}

void draw_legend(Svg& svg, const std::vector<LegendItem>& items, double x0, double y0,
                 double max_width) {
  double x = 0, y = y0;
  svg.raw("<g class=\"legend\">\n");
  for (const auto& item : items) {
    double w = std::min(item_width(item), max_width);
    if (x > 0 && x + w > max_width) x = 0, y += kLegendRow;
    svg.rect(x0 + x, y + 3, 11, 11, item.colour);
    svg.text(x0 + x + 16, y + 13, fit_label(item.label, w - 30));
    x += w;
  }
  svg.raw("</g>\n");
}

std::pair<double, double> finite_range(const std::vector<double>& values) {
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  return {lo, hi};
}

}  // namespace detail
}  // namespace jarvis::charts
