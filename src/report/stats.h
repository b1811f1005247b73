// Order statistics of report columns. The sums, means, deviations and
// rounding with the exact arithmetic of pandas / NumPy (Kahan groupby sums,
// NumPy pairwise sums, np.round) are in src/pycompat/numeric.h.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "pycompat/numeric.h"

namespace jarvis::stats {

using pycompat::kNaN;

// Median (NaN for an empty input): mean of the two middle values for an even
// count, as pandas and NumPy compute it.
inline double median(std::span<const double> v) {
  if (v.empty()) return kNaN;
  std::vector<double> s(v.begin(), v.end());
  size_t n = s.size();
  auto mid = s.begin() + static_cast<std::ptrdiff_t>(n / 2);
  // Without NaN the order is total: selecting the middle elements gives the
  // values a full sort puts there, in linear time.
  if (std::none_of(s.begin(), s.end(), [](double x) { return std::isnan(x); })) {
    std::nth_element(s.begin(), mid, s.end());
    if (n % 2) return *mid;
    return (*std::max_element(s.begin(), mid) + *mid) / 2.0;
  }
  std::sort(s.begin(), s.end());
  if (n % 2) return s[n / 2];
  return (s[n / 2 - 1] + s[n / 2]) / 2.0;
}

inline double min(std::span<const double> v) {
  return v.empty() ? kNaN : *std::min_element(v.begin(), v.end());
}
inline double max(std::span<const double> v) {
  return v.empty() ? kNaN : *std::max_element(v.begin(), v.end());
}

// Running sum as pandas cumsum.
inline std::vector<double> cumsum(std::span<const double> v) {
  std::vector<double> out(v.size());
  double acc = 0.0;
  for (size_t k = 0; k < v.size(); ++k) out[k] = acc += v[k];
  return out;
}

}  // namespace jarvis::stats
