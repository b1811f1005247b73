// Internal drawing helpers of the chart kinds: an SVG text builder, linear
// and log scales with readable ticks, label fitting and legends.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "charts/charts.h"

namespace jarvis::charts::detail {

inline constexpr double kWidth = 760;
inline constexpr double kFontSize = 11;
inline constexpr const char* kInk = "#333333";
inline constexpr const char* kGrid = "#e3e3e3";

std::string xml_escape(std::string_view text);
// Coordinates with at most two decimals, no trailing zeros.
std::string num(double v);

// Approximate rendered width of text (sans-serif, average glyph).
double text_width(std::string_view text, double font_size = kFontSize);
// Text shortened with an ellipsis so it fits max_width.
std::string fit_label(std::string_view text, double max_width, double font_size = kFontSize);

class Svg {
 public:
  // Title is drawn at the top; body starts below kTitleHeight.
  static constexpr double kTitleHeight = 34;

  void rect(double x, double y, double w, double h, std::string_view fill,
            std::string_view cls = "", std::string_view tooltip = "", std::string_view extra = "");
  void line(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 1,
            std::string_view cls = "", std::string_view dash = "");
  void text(double x, double y, std::string_view content, std::string_view anchor = "start",
            double size = kFontSize, std::string_view extra = "");
  void circle(double cx, double cy, double r, std::string_view fill, std::string_view cls = "",
              std::string_view tooltip = "", std::string_view extra = "");
  void path(std::string_view d, std::string_view fill, std::string_view stroke,
            std::string_view cls = "", std::string_view tooltip = "", std::string_view extra = "");
  void raw(std::string_view markup) { body_ += markup; }
  // Opens the plot group carrying the axis domains (data units).
  void open_plot(double x_min, double x_max, double y_min, double y_max);
  void close_group() { body_ += "</g>\n"; }

  std::string finish(std::string_view title, double height) const;

 private:
  std::string body_;
};

struct LinearScale {
  double d0 = 0, d1 = 1, r0 = 0, r1 = 1;
  double operator()(double v) const;
};
struct LogScale {
  double d0 = 1, d1 = 10, r0 = 0, r1 = 1;  // d0, d1 > 0
  double operator()(double v) const;
};

struct Ticks {
  double lo = 0, hi = 1;
  std::vector<double> values;
};
// Round ticks (1, 2, 5 x 10^k steps) whose span covers [lo, hi].
Ticks linear_ticks(double lo, double hi, int target = 6);
// Decade ticks covering [lo, hi] (both > 0).
Ticks log_ticks(double lo, double hi);

std::string tick_label(double value, const DisplayUnit& unit);
std::string axis_title(std::string_view label, const DisplayUnit& unit);

struct LegendItem {
  std::string colour, label;
};
// Legend rows wrapped to max_width starting at (x, y); returns the height used.
double legend_height(const std::vector<LegendItem>& items, double max_width);
void draw_legend(Svg& svg, const std::vector<LegendItem>& items, double x, double y,
                 double max_width);

// Finite values only, and their range (lo > hi when none).
std::pair<double, double> finite_range(const std::vector<double>& values);

}  // namespace jarvis::charts::detail
