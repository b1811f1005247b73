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
// allocation, k runs cost O(n log k) stable merges through one buffer, and
// input with many runs falls back to std::stable_sort.

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <vector>

namespace jarvis {

namespace detail {

// std::merge of the runs [lo, mid) and [mid, hi) of `in` into the same
// positions of `out`, comparing only where they overlap: the left run's
// elements not after the right run's first, and the right run's not before
// the left run's last, are moved as they are (found by binary search). Runs
// that overlap little (a trace tiled from copies: each copy's runtime calls
// after its ops, one run a copy) then cost a move, not a comparison per
// element per pass. The same order as std::merge: of equal elements, the
// left run's first.
template <class In, class Out, class Offset, class Compare>
void merge_overlap(In in, Out out, Offset lo, Offset mid, Offset hi, Compare& comp) {
  const In left_cut = std::upper_bound(in + lo, in + mid, *(in + mid), comp);
  const In right_cut = std::lower_bound(in + mid, in + hi, *(in + mid - 1), comp);
  Out to = std::move(in + lo, left_cut, out + lo);
  to = std::merge(std::make_move_iterator(left_cut), std::make_move_iterator(in + mid),
                  std::make_move_iterator(in + mid), std::make_move_iterator(right_cut), to, comp);
  std::move(right_cut, in + hi, to);
}

// One merge pass: runs [bounds[k], bounds[k + 1]) of `in` merged pairwise
// into the same positions of `out` (a last odd run moved as it is); bounds
// then holds the merged runs' boundaries.
template <class In, class Out, class Offset, class Compare>
void merge_run_pairs(In in, Out out, std::vector<Offset>& bounds, Compare& comp) {
  const size_t runs = bounds.size() - 1;
  size_t kept = 0;
  for (size_t r = 0; r < runs; r += 2) {
    const Offset lo = bounds[r], mid = bounds[r + 1];
    bounds[kept++] = lo;
    if (r + 1 < runs) {
      merge_overlap(in, out, lo, mid, bounds[r + 2], comp);
    } else {
      std::move(in + lo, in + mid, out + lo);
    }
  }
  bounds[kept++] = bounds[runs];
  bounds.resize(kept);
}

}  // namespace detail

// The sorted runs [bounds[k], bounds[k + 1]) of `first` (bounds from 0 to the
// length) merged into one, pairwise, pass after pass, between `first` and
// `other` (as long): true when the merged sequence ends in `other`. Stable:
// std::merge's order, of equal elements the earlier run's first.
template <class It, class OtherIt, class Offset, class Compare>
bool merge_sorted_runs(It first, OtherIt other, std::vector<Offset> bounds, Compare comp) {
  bool in_other = false;  // where the current runs are
  while (bounds.size() > 2) {
    if (in_other)
      detail::merge_run_pairs(other, first, bounds, comp);
    else
      detail::merge_run_pairs(first, other, bounds, comp);
    in_other = !in_other;
  }
  return in_other;
}

// `more` (sorted) merged into `into` (sorted), from the back into room
// `into` grows by (no buffer: space it reserved is used in place). Stable:
// of equal elements, `into`'s first.
template <class T, class Compare = std::less<>>
void merge_into_back(std::vector<T>& into, const std::vector<T>& more, Compare comp = {}) {
  size_t i = into.size(), j = more.size();
  into.resize(i + j);
  for (size_t w = into.size(); j > 0;) {
    if (i > 0 && comp(more[j - 1], into[i - 1]))
      into[--w] = into[--i];
    else
      into[--w] = more[--j];
  }
}

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
  // Adjacent runs merged pairwise, pass after pass, between the input and
  // one buffer allocated once (std::inplace_merge allocated a buffer of up
  // to half its range on every call: fresh pages for each of the many
  // merges of a large sort). std::merge is stable (of equal elements, the
  // left run's come first), so equal elements keep their input order, as
  // std::stable_sort leaves them.
  using Value = typename std::iterator_traits<RandomIt>::value_type;
  auto buffer = std::make_unique_for_overwrite<Value[]>(static_cast<size_t>(n));
  if (merge_sorted_runs(first, buffer.get(), std::move(bounds), comp))
    std::move(buffer.get(), buffer.get() + n, first);
}

template <class Container, class Compare = std::less<>>
void stable_sort_runs(Container& c, Compare comp = {}) {
  stable_sort_runs(std::begin(c), std::end(c), comp);
}

}  // namespace jarvis
