// stats::median (selection of the middle elements) against the median of a
// fully sorted copy, on odd and even counts, duplicates, negative values and
// known values; NaN-free inputs only take the selection path.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "report/stats.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace {

double median_by_sort(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

}  // namespace

TEST_CASE("stats::median equals the middle of a sorted copy") {
  CHECK(std::isnan(jarvis::stats::median(std::vector<double>{})));
  CHECK(jarvis::stats::median(std::vector<double>{4.5}) == 4.5);
  CHECK(jarvis::stats::median(std::vector<double>{3, 1, 2}) == 2.0);
  CHECK(jarvis::stats::median(std::vector<double>{10, 1, 4, 7}) == 5.5);
  CHECK(jarvis::stats::median(std::vector<double>{0.1, 0.2}) == (0.1 + 0.2) / 2.0);

  std::mt19937 rng(7);
  std::uniform_real_distribution<double> wide(-1e6, 1e6);
  std::uniform_int_distribution<int> few(0, 5);
  for (size_t n = 1; n <= 64; ++n)
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<double> v(n);
      for (double& x : v) x = trial % 2 ? wide(rng) : few(rng) * 0.25;  // odd trials: ties
      const std::vector<double> before = v;
      CHECK(jarvis::stats::median(v) == median_by_sort(v));
      CHECK(v == before);  // the input is not reordered
    }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
