#include "pycompat/numeric.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "pycompat/text.h"

namespace jarvis::pycompat {

double pandas_series_sum(std::span<const double> values) {
  if (values.empty()) return 0.0;
  std::vector<double> v;
  v.reserve(values.size());
  for (double x : values) v.push_back(std::isnan(x) ? 0.0 : x);
  // The reduction seeds the accumulator with the first element.
  return v[0] + numpy_sum(std::span<const double>(v).subspan(1));
}

double python_round(double x, int ndigits) {
  if (!std::isfinite(x)) return x;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", ndigits, x);
  double r = std::strtod(buf, nullptr);
  if (r == 0.0) r = std::copysign(0.0, x);
  return r;
}

std::optional<double> python_float(std::string_view text) {
  std::string_view t = ascii_trim(text);
  if (t.empty()) return std::nullopt;
  std::string lower = ascii_lower(t);
  std::string_view body = lower;
  bool neg = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    neg = body[0] == '-';
    body.remove_prefix(1);
  }
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (body == "inf" || body == "infinity") return neg ? -kInf : kInf;
  if (body == "nan") return kNaN;
  double v = 0;
  const char* b = t.data();
  if (t[0] == '+') ++b;
  auto res = std::from_chars(b, t.data() + t.size(), v);
  if (res.ec != std::errc() || res.ptr != t.data() + t.size()) return std::nullopt;
  return v;
}

}  // namespace jarvis::pycompat
