#pragma once
// stable_sort_runs: std::stable_sort's result, fast on input that is already
// sorted or made of a few sorted runs.
//
// A trace's events arrive nearly in time order: the host events of a Kineto
// trace form a handful of ascending runs (one inversion per thread switch),
// an op's kernels are usually in launch order already. std::sort and
// std::stable_sort pay O(n log n) on such input, and std::stable_sort also
// allocates a buffer on every call, which dominated the many tiny sorts (an
// op's kernels) of the report. Here sorted input costs one pass and no
// allocation, k runs cost O(n log k) stable merges, and input with many runs
// falls back to std::stable_sort.

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>
#include <vector>

namespace jarvis {

template <class RandomIt, class Compare = std::less<>>
void stable_sort_runs(RandomIt first, RandomIt last, Compare comp = {}) {
  RandomIt unsorted = std::is_sorted_until(first, last, comp);
  if (unsorted == last) return;
  // Boundaries of the maximal non-descending runs, as offsets from first.
  using Offset = typename std::iterator_traits<RandomIt>::difference_type;
  const Offset n = last - first;
  // Past this many runs the merges cost about what a full sort does.
  const Offset max_runs = std::max<Offset>(8, n / 64);
  std::vector<Offset> bounds{0, unsorted - first};
  for (RandomIt it = unsorted + 1; it != last; ++it) {
    if (!comp(*it, *(it - 1))) continue;
    bounds.push_back(it - first);
    if (static_cast<Offset>(bounds.size()) > max_runs) {
      std::stable_sort(first, last, comp);
      return;
    }
  }
  bounds.push_back(n);
  // Adjacent runs merged pairwise (std::inplace_merge is stable: of equal
  // elements, the left run's come first), so the order of equal elements is
  // the input order, as std::stable_sort leaves it.
  while (bounds.size() > 2) {
    size_t out = 0;
    for (size_t k = 0; k + 1 < bounds.size(); k += 2) {
      bounds[out++] = bounds[k];
      if (k + 2 < bounds.size())
        std::inplace_merge(first + bounds[k], first + bounds[k + 1], first + bounds[k + 2], comp);
    }
    bounds[out++] = n;
    bounds.resize(out);
  }
}

template <class Container, class Compare = std::less<>>
void stable_sort_runs(Container& c, Compare comp = {}) {
  stable_sort_runs(std::begin(c), std::end(c), comp);
}

}  // namespace jarvis
