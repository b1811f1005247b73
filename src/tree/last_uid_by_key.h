#pragma once
// LastUidByKey: the last event UID added under each key, for the call tree's
// launch links (flow ids, (thread, link) pairs).

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "base/sort_runs.h"
#include "trace/trace.h"

namespace jarvis {

// The last event added per key, found by search: filled in event order,
// then sorted once. Cheaper than a node-based hash map for the hundreds of
// thousands of flow and link keys of a large trace, whose node allocations
// and frees dominated the linking.
template <class Key>
class LastUidByKey {
 public:
  void add(const Key& key, Uid uid) { entries_.emplace_back(key, uid); }
  // Call once after the last add.
  void seal() {
    // Uids are added in increasing order, so sorting (key, uid) pairs puts
    // the last event of each key at the end of its run. Keys (correlation
    // ids, ...) mostly grow with the events: few runs to merge.
    stable_sort_runs(entries_);
    keep_last_per_key();
  }
  // seal() for keys whose leading part, bucket_of(key) < buckets, takes few
  // values that interleave in event order (the GPU streams of (thread, link)
  // keys), while the rest grows within each: a stable counting sort by the
  // bucket, then the nearly sorted sort within each, gives seal()'s order
  // where a sort of the interleaved runs would fall back to a full sort.
  template <class BucketOf>
  void seal_by_bucket(size_t buckets, BucketOf bucket_of) {
    std::vector<size_t> start(buckets + 1, 0);
    for (const auto& e : entries_) ++start[bucket_of(e.first) + 1];
    for (size_t b = 0; b < buckets; ++b) start[b + 1] += start[b];
    std::vector<std::pair<Key, Uid>> sorted(entries_.size());
    std::vector<size_t> cursor(start.begin(), start.end() - 1);
    for (const auto& e : entries_) sorted[cursor[bucket_of(e.first)]++] = e;
    for (size_t b = 0; b < buckets; ++b)
      stable_sort_runs(sorted.begin() + static_cast<std::ptrdiff_t>(start[b]),
                       sorted.begin() + static_cast<std::ptrdiff_t>(start[b + 1]));
    entries_ = std::move(sorted);
    keep_last_per_key();
  }
  // The last event of `key`. `hint` is the position of the previous
  // lookup's answer: the search gallops out from there, so keys that mostly
  // grow from one lookup to the next (links met in event order) cost a few
  // steps instead of a binary search of the whole index each.
  Uid find(const Key& key, size_t& hint) const {
    const size_t n = entries_.size();
    if (n == 0) return kNoUid;
    auto below = [&](size_t i) { return entries_[i].first < key; };
    size_t h = std::min(hint, n - 1), lo = 0, hi = n;  // [0, lo) below key, [hi, n) not
    if (below(h)) {
      lo = h + 1;
      for (size_t step = 1; lo < n; step *= 2) {
        size_t p = std::min(n - 1, h + step);
        if (!below(p)) {
          hi = p;
          break;
        }
        lo = p + 1;
      }
    } else {
      hi = h;
      for (size_t step = 1; hi > 0; step *= 2) {
        size_t p = h >= step ? h - step : 0;
        if (below(p)) {
          lo = p + 1;
          break;
        }
        hi = p;
      }
    }
    auto it =
        std::lower_bound(entries_.begin() + static_cast<std::ptrdiff_t>(lo),
                         entries_.begin() + static_cast<std::ptrdiff_t>(std::max(lo, hi)), key,
                         [](const auto& entry, const Key& k) { return entry.first < k; });
    hint = static_cast<size_t>(it - entries_.begin());
    return it != entries_.end() && it->first == key ? it->second : kNoUid;
  }
  bool empty() const { return entries_.empty(); }

 private:
  void keep_last_per_key() {
    size_t out = 0;
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (i + 1 < entries_.size() && entries_[i + 1].first == entries_[i].first) continue;
      entries_[out++] = entries_[i];
    }
    entries_.resize(out);
  }

  std::vector<std::pair<Key, Uid>> entries_;
};

}  // namespace jarvis
