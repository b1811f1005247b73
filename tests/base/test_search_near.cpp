// lower_bound_near against std::lower_bound: the same position for every key
// (present, absent, below and above every element, among duplicates) from
// every hint, in sorted ranges with runs of equal elements, an empty range
// and a one-element range, with the default and a given comparison.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#include "base/search_near.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

// Every key in [lowest, highest] from every hint of `v`: the position
// std::lower_bound gives.
template <class Less = std::less<>>
void check_all(const std::vector<int>& v, int lowest, int highest, Less less = {}) {
  for (int key = lowest; key <= highest; ++key) {
    const auto want = std::lower_bound(v.begin(), v.end(), key, less);
    for (auto hint = v.begin();; ++hint) {
      CAPTURE(key);
      CAPTURE(hint - v.begin());
      CHECK(jarvis::lower_bound_near(v.begin(), v.end(), hint, key, less) == want);
      if (hint == v.end()) break;
    }
  }
}

TEST_CASE("lower_bound_near: std::lower_bound's position from every hint") {
  check_all({}, -2, 2);
  check_all({5}, 3, 7);
  std::mt19937 rng(11);
  for (size_t n : {2u, 7u, 64u, 200u}) {
    std::vector<int> v(n);
    for (int& x : v) x = static_cast<int>(rng() % (n / 2 + 1)) * 2;  // even values, repeated
    std::sort(v.begin(), v.end());
    check_all(v, -3, v.back() + 3);
    std::vector<int> down(v.rbegin(), v.rend());  // sorted by a given comparison
    check_all(down, -3, v.back() + 3, std::greater<>{});
  }
}

TEST_CASE("lower_bound_near: keys walked in order from the last position") {
  std::vector<std::pair<unsigned, unsigned>> index;
  for (unsigned k = 0; k < 5000; ++k) index.emplace_back(k / 3 * 7, k);  // runs of three
  auto at = index.begin();
  for (unsigned key = 0; key < 12000; key += 5) {
    at = jarvis::lower_bound_near(index.begin(), index.end(), at, std::make_pair(key, 0u));
    CHECK(at == std::lower_bound(index.begin(), index.end(), std::make_pair(key, 0u)));
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
