// stable_sort_runs against std::stable_sort: the same permutation (equal
// keys keep their input order) on sorted input, a few runs, many runs (the
// fallback), reversed input, ties across run boundaries and tiny inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <iterator>
#include <random>
#include <utility>
#include <vector>

#include "base/sort_runs.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace {

// (key, input position): comparing on the key alone, the positions show
// whether equal keys kept their order.
using Item = std::pair<int, int>;
bool key_less(const Item& a, const Item& b) {
  return a.first < b.first;
}

std::vector<Item> with_positions(const std::vector<int>& keys) {
  std::vector<Item> items;
  for (size_t k = 0; k < keys.size(); ++k) items.emplace_back(keys[k], static_cast<int>(k));
  return items;
}

void check_like_stable_sort(const std::vector<int>& keys) {
  std::vector<Item> expected = with_positions(keys), got = expected;
  std::stable_sort(expected.begin(), expected.end(), key_less);
  jarvis::stable_sort_runs(got, key_less);
  CHECK(got == expected);
}

// `runs` ascending runs of random length over keys drawn from [0, range):
// a small range puts equal keys in different runs.
std::vector<int> runs_of(std::mt19937& rng, size_t n, size_t runs, int range) {
  std::vector<int> keys(n);
  std::uniform_int_distribution<int> key(0, range - 1);
  for (int& k : keys) k = key(rng);
  std::vector<size_t> cuts{0, n};
  std::uniform_int_distribution<size_t> at(0, n);
  for (size_t k = 1; k < runs; ++k) cuts.push_back(at(rng));
  std::sort(cuts.begin(), cuts.end());
  for (size_t k = 0; k + 1 < cuts.size(); ++k)
    std::sort(keys.begin() + static_cast<long>(cuts[k]),
              keys.begin() + static_cast<long>(cuts[k + 1]));
  return keys;
}

}  // namespace

TEST_CASE("stable_sort_runs gives std::stable_sort's order") {
  std::mt19937 rng(20261125);
  SUBCASE("tiny inputs") {
    check_like_stable_sort({});
    check_like_stable_sort({7});
    check_like_stable_sort({2, 1});
    check_like_stable_sort({1, 1});
    check_like_stable_sort({3, 1, 2});
  }
  SUBCASE("sorted, reversed and constant") {
    std::vector<int> keys(1000);
    for (size_t k = 0; k < keys.size(); ++k) keys[k] = static_cast<int>(k / 3);
    check_like_stable_sort(keys);
    std::reverse(keys.begin(), keys.end());
    check_like_stable_sort(keys);
    check_like_stable_sort(std::vector<int>(500, 4));
  }
  SUBCASE("a few runs, ties across runs (the merge path)") {
    for (size_t runs : {2u, 3u, 5u, 8u})
      for (int range : {3, 50, 1000000}) check_like_stable_sort(runs_of(rng, 3000, runs, range));
  }
  SUBCASE("many runs (the fallback)") {
    for (int range : {4, 1000000}) check_like_stable_sort(runs_of(rng, 3000, 400, range));
    std::vector<int> noise(5000);
    std::uniform_int_distribution<int> key(0, 99);
    for (int& k : noise) k = key(rng);
    check_like_stable_sort(noise);
  }
}

// A tiled trace's host events: per copy its ops in time order, then its
// runtime calls (interleaved with the ops in time), the next copy later in
// time. Runs: [ops 0], [calls 0, ops 1], [calls 1, ops 2], ...
std::vector<int> copies_of(size_t copies, int per_run, int step) {
  std::vector<int> keys;
  for (size_t c = 0; c < copies; ++c) {
    const int base = static_cast<int>(c) * 4 * per_run;
    for (int i = 0; i < per_run; ++i) keys.push_back(base + 2 * i);
    for (int i = 0; i < per_run; ++i) keys.push_back(base + 2 * i + step);
  }
  return keys;
}

TEST_CASE("stable_sort_runs merges runs that overlap little by their overlap") {
  SUBCASE("the same order as std::stable_sort, ties at the runs' ends") {
    for (int step : {1, 0, 2}) check_like_stable_sort(copies_of(64, 100, step));
    check_like_stable_sort({1, 2, 3, 3, 1, 3, 3, 4, 0, 3, 5});
  }
  SUBCASE("comparisons: about the overlaps, not a pass over every element per merge") {
    const std::vector<int> keys = copies_of(64, 100, 1);  // 65 runs, 12,800 elements
    std::vector<Item> items = with_positions(keys);
    size_t comparisons = 0;
    jarvis::stable_sort_runs(items, [&](const Item& a, const Item& b) {
      ++comparisons;
      return key_less(a, b);
    });
    CHECK(std::is_sorted(items.begin(), items.end(), key_less));
    // Finding the runs reads each element once; a merge of whole runs pass
    // after pass reads them all again in each of the seven passes (~90,000).
    CHECK(comparisons < 3 * keys.size());
  }
}

TEST_CASE("stable_sort_runs leaves sorted input untouched and sorts pairs lexicographically") {
  std::vector<std::pair<double, unsigned>> timed{{1.0, 4}, {1.0, 7}, {2.5, 1}};
  auto before = timed;
  jarvis::stable_sort_runs(timed);
  CHECK(timed == before);
  std::vector<std::pair<double, unsigned>> mixed{{3.0, 2}, {1.0, 9}, {1.0, 3}, {2.0, 5}, {0.5, 8}};
  auto expected = mixed;
  std::sort(expected.begin(), expected.end());
  jarvis::stable_sort_runs(mixed);
  CHECK(mixed == expected);
}

TEST_CASE("merge_into_back gives std::merge's sequence, the first vector's equal elements first") {
  std::mt19937 rng(42);
  for (int round = 0; round < 200; ++round) {
    // (key, origin): few keys, so ties across the two vectors are common.
    std::vector<std::pair<int, int>> into, more;
    for (size_t k = rng() % 50; k > 0; --k) into.emplace_back(static_cast<int>(rng() % 8), 0);
    for (size_t k = rng() % 50; k > 0; --k) more.emplace_back(static_cast<int>(rng() % 8), 1);
    const auto by_key = [](const auto& a, const auto& b) { return a.first < b.first; };
    std::stable_sort(into.begin(), into.end(), by_key);
    std::stable_sort(more.begin(), more.end(), by_key);
    std::vector<std::pair<int, int>> expected;
    std::merge(into.begin(), into.end(), more.begin(), more.end(), std::back_inserter(expected),
               by_key);
    into.reserve(into.size() + more.size());
    jarvis::merge_into_back(into, more, by_key);
    CHECK(into == expected);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
