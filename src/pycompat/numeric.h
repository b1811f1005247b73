// Python, NumPy and pandas numerics with the exact arithmetic of the library
// each name says it emulates, so report cells reproduce TraceLens's numbers to
// the last digit:
//  * pandas_groupby_sum / _mean: DataFrame.groupby(...).sum() / .mean():
//    Kahan-compensated running sum, NaN skipped;
//  * pandas_groupby_std: groupby std, Welford update, sample (ddof = 1);
//  * numpy_sum / _mean / _std: np.sum on a contiguous array, pairwise
//    summation in 8-way unrolled blocks of up to 128 values; std is
//    population (ddof = 0);
//  * pandas_series_sum: Series.sum() (NaN skipped, the reduction seeded with
//    the first value, the rest summed pairwise);
//  * numpy_round: np.round / np.float64.round: rint(x * 10^d) / 10^d;
//  * python_round: Python's round(x, n), correctly rounded (ties to even on
//    the exact decimal value: round(2.675, 2) == 2.67, np.round gives 2.68);
//  * python_float: Python's float(str).
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace jarvis::pycompat {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// pandas groupby "sum" (Kahan summation, skipping NaN).
inline double pandas_groupby_sum(std::span<const double> v) {
  double sum = 0.0, comp = 0.0;
  for (double x : v) {
    if (std::isnan(x)) continue;
    double y = x - comp;
    double t = sum + y;
    comp = t - sum - y;
    sum = t;
  }
  return sum;
}

// pandas groupby "mean".
inline double pandas_groupby_mean(std::span<const double> v) {
  size_t n = 0;
  for (double x : v) n += !std::isnan(x);
  return n ? pandas_groupby_sum(v) / static_cast<double>(n) : kNaN;
}

// pandas groupby "std" (sample standard deviation, NaN for fewer than 2 values).
inline double pandas_groupby_std(std::span<const double> v) {
  double mean = 0.0, m2 = 0.0;
  size_t n = 0;
  for (double x : v) {
    if (std::isnan(x)) continue;
    ++n;
    double old_mean = mean;
    mean += (x - old_mean) / static_cast<double>(n);
    m2 += (x - mean) * (x - old_mean);
  }
  if (n < 2) return kNaN;
  return std::sqrt(m2 / static_cast<double>(n - 1));
}

// NumPy's pairwise summation (np.sum / np.add.reduce on a contiguous array).
inline double numpy_sum(std::span<const double> v) {
  const size_t n = v.size();
  if (n < 8) {
    double res = 0.0;  // NumPy starts from -0.0; identical for these sums
    for (double x : v) res += x;
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int k = 0; k < 8; ++k) r[k] = v[k];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (int k = 0; k < 8; ++k) r[k] += v[i + k];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += v[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return numpy_sum(v.subspan(0, n2)) + numpy_sum(v.subspan(n2));
}

inline double numpy_mean(std::span<const double> v) {
  return v.empty() ? kNaN : numpy_sum(v) / static_cast<double>(v.size());
}

// np.std (population, ddof = 0).
inline double numpy_std(std::span<const double> v) {
  if (v.empty()) return kNaN;
  double mean = numpy_mean(v);
  std::vector<double> sq(v.size());
  for (size_t k = 0; k < v.size(); ++k) {
    double d = v[k] - mean;
    sq[k] = d * d;
  }
  return std::sqrt(numpy_sum(sq) / static_cast<double>(v.size()));
}

// pandas Series.sum(): NaN counts as 0; the reduction seeds its accumulator
// with the first value and sums the rest pairwise (numpy_sum).
double pandas_series_sum(std::span<const double> values);

// np.round(x, decimals) for decimals >= 0: rint(x * 10^d) / 10^d, ties to even
// on the scaled binary value (np.round(0.0165, 3) == 0.017 while
// round(0.0165, 3) == 0.016).
inline double numpy_round(double x, int decimals) {
  double scale = std::pow(10.0, decimals);
  return std::nearbyint(x * scale) / scale;
}

// Python's round(x, ndigits) on a float: the correctly rounded decimal
// (ties to even on the exact binary value), sign of zero kept.
double python_round(double x, int ndigits);

// Python's float(text): surrounding white space allowed, decimal and exponent
// forms, "inf" / "infinity" / "nan" in any case; nullopt where Python raises
// ValueError.
std::optional<double> python_float(std::string_view text);

}  // namespace jarvis::pycompat
