#pragma once
// lower_bound_near: std::lower_bound's position, searched from where the last
// key was found. Keys asked in order (a host thread's gaps in time order, a
// finding's sorted kernel UIDs) then cost the log of how far each moves, not
// of the whole range: a 100k-key walk of a sorted index is one pass, not
// 100k searches of all of it.

#include <algorithm>
#include <functional>
#include <iterator>

namespace jarvis {

// The first element of the sorted [first, last) not less than `key` (as
// std::lower_bound), for any `hint` in [first, last]: back by a binary
// search of [first, hint) when the key lies before it, else forward from it
// by steps that double, then a binary search of the last step.
template <class It, class T, class Less = std::less<>>
It lower_bound_near(It first, It last, It hint, const T& key, Less less = {}) {
  if (hint != first && !less(*std::prev(hint), key))
    return std::lower_bound(first, hint, key, less);
  // Every element before hint + lo is less than key.
  const auto n = std::distance(hint, last);
  std::iter_difference_t<It> lo = 0, step = 1;
  while (lo + step <= n && less(*std::next(hint, lo + step - 1), key)) lo += step, step *= 2;
  return std::lower_bound(std::next(hint, lo), std::next(hint, std::min(n, lo + step - 1)), key,
                          less);
}

}  // namespace jarvis
