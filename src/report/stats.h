// Statistics with the exact arithmetic of the libraries TraceLens relies on,
// so aggregated report cells reproduce the reference to the last digit where
// that is cheap:
//  * pandas groupby sum / mean: Kahan-compensated running sum (group_sum);
//  * pandas groupby std: Welford update, sample (ddof = 1) variance;
//  * NumPy sum / mean / std (kernel_details summaries): pairwise summation
//    with 8-way unrolled blocks of up to 128 elements; std is population (n);
//  * median: mean of the two middle values for an even count;
//  * NumPy round: rint(x * 10^d) / 10^d (ties to even on the scaled value).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <vector>

namespace jarvis::stats {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// pandas groupby "sum" (Kahan summation, skipping NaN).
inline double pandas_sum(std::span<const double> v) {
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
inline double pandas_mean(std::span<const double> v) {
  size_t n = 0;
  for (double x : v) n += !std::isnan(x);
  return n ? pandas_sum(v) / static_cast<double>(n) : kNaN;
}

// pandas groupby "std" (sample standard deviation, NaN for fewer than 2 values).
inline double pandas_std(std::span<const double> v) {
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

// Median (NaN for an empty input).
inline double median(std::span<const double> v) {
  if (v.empty()) return kNaN;
  std::vector<double> s(v.begin(), v.end());
  std::sort(s.begin(), s.end());
  size_t n = s.size();
  if (n % 2) return s[n / 2];
  return (s[n / 2 - 1] + s[n / 2]) / 2.0;
}

inline double min(std::span<const double> v) {
  return v.empty() ? kNaN : *std::min_element(v.begin(), v.end());
}
inline double max(std::span<const double> v) {
  return v.empty() ? kNaN : *std::max_element(v.begin(), v.end());
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

// np.round(x, decimals).
inline double numpy_round(double x, int decimals) {
  double scale = std::pow(10.0, decimals);
  return std::nearbyint(x * scale) / scale;
}

// Running sum as pandas cumsum.
inline std::vector<double> cumsum(std::span<const double> v) {
  std::vector<double> out(v.size());
  double acc = 0.0;
  for (size_t k = 0; k < v.size(); ++k) out[k] = acc += v[k];
  return out;
}

}  // namespace jarvis::stats
