// hash_mix / hash_of, the one way keys of several integers are hashed
// (thread keys, kernel-summary groups, perf-model cache keys, ...): order
// matters, small ids do not collide, and a prime bucket count (libstdc++'s
// unordered containers) spreads them evenly.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "base/hash_mix.h"
#include "trace/trace.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::hash_finish;
using jarvis::hash_mix;
using jarvis::hash_of;
using jarvis::kHashMixStart;

TEST_CASE("hash_of: the parts' order matters, and it equals folding them one by one") {
  CHECK(hash_of(1, 2) != hash_of(2, 1));
  CHECK(hash_of(0, 7) != hash_of(7, 0));
  CHECK(hash_of(5) != hash_of(5, 0));  // a trailing zero part is still a part
  uint64_t h = hash_mix(hash_mix(hash_mix(kHashMixStart, 3), 9), 27);
  CHECK(hash_of(3, 9, 27) == hash_finish(h));
}

TEST_CASE("hash_of: 256 x 256 small id pairs are all distinct and fill prime buckets evenly") {
  // Ids of interned names and threads are small and dense: the worst case for
  // a combine that only shifts or XORs them.
  constexpr uint64_t kIds = 256;
  constexpr size_t kBuckets = 4099;  // a prime, as libstdc++ picks
  std::unordered_set<size_t> seen;
  std::vector<int> load(kBuckets, 0);
  for (uint64_t a = 0; a < kIds; ++a)
    for (uint64_t b = 0; b < kIds; ++b) {
      size_t h = hash_of(a, b);
      seen.insert(h);
      ++load[h % kBuckets];
    }
  CHECK(seen.size() == kIds * kIds);
  // 65,536 keys in 4,099 buckets: 16 on average. A uniform spread puts the
  // fullest bucket near 16 + 4 * sqrt(16) = 32; a poor combine stacks
  // hundreds into a few buckets.
  int fullest = *std::max_element(load.begin(), load.end());
  int emptiest = *std::min_element(load.begin(), load.end());
  CHECK(fullest <= 40);
  CHECK(emptiest >= 1);
}

TEST_CASE("ThreadKeyHash: pid and tid are not interchangeable, nor a string id with a number") {
  using jarvis::ProcId;
  using jarvis::ThreadKey;
  jarvis::ThreadKeyHash hash;
  ProcId one{1, false}, two{2, false}, one_text{1, true};
  CHECK(hash(ThreadKey{one, two}) != hash(ThreadKey{two, one}));
  CHECK(hash(ThreadKey{one, two}) != hash(ThreadKey{one_text, two}));
  CHECK(hash(ThreadKey{one, two}) == hash(ThreadKey{ProcId{1, false}, ProcId{2, false}}));
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
