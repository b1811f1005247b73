// LastUidByKey against a std::map of the last UID per key: every lookup,
// present or absent, from any hint (the galloping search must not depend on
// it), keys met in growing order and at random, seal() and seal_by_bucket().
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "tree/last_uid_by_key.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;

namespace {

struct BucketKey {
  uint32_t bucket;
  int64_t value;
  auto operator<=>(const BucketKey&) const = default;
};

// Every key in `queries`, looked up three ways: with a hint carried from
// lookup to lookup, with a fresh hint at 0 and with one past the end.
template <class Key>
void check_lookups(const LastUidByKey<Key>& index, const std::map<Key, Uid>& expected,
                   const std::vector<Key>& queries) {
  size_t carried = 0;
  for (const Key& k : queries) {
    auto it = expected.find(k);
    Uid want = it == expected.end() ? kNoUid : it->second;
    size_t at_start = 0, past_end = ~size_t{0};
    CHECK(index.find(k, carried) == want);
    CHECK(index.find(k, at_start) == want);
    CHECK(index.find(k, past_end) == want);
  }
}

}  // namespace

TEST_CASE("LastUidByKey: the last UID per key, from any hint") {
  std::mt19937 rng(7);
  for (int n : {0, 1, 2, 3, 17, 1000, 5000}) {
    CAPTURE(n);
    LastUidByKey<int64_t> index;
    std::map<int64_t, Uid> expected;
    // Keys that mostly grow with the UIDs (correlation ids), with repeats
    // and some out of order.
    int64_t next = 100;
    for (Uid u = 0; u < static_cast<Uid>(n); ++u) {
      int64_t key = rng() % 8 == 0 ? static_cast<int64_t>(rng() % (n + 200)) : next;
      next += rng() % 3;
      index.add(key, u);
      expected[key] = u;
    }
    index.seal();
    CHECK(index.empty() == (n == 0));
    std::vector<int64_t> growing, random;
    for (int64_t k = -5; k < n + 310; ++k) growing.push_back(k);
    for (int q = 0; q < 2000; ++q) random.push_back(static_cast<int64_t>(rng() % (n + 320)) - 5);
    check_lookups(index, expected, growing);
    check_lookups(index, expected, random);
  }
}

TEST_CASE("LastUidByKey: seal_by_bucket gives seal()'s answers on interleaved buckets") {
  std::mt19937 rng(11);
  for (int n : {0, 1, 5, 3000}) {
    CAPTURE(n);
    LastUidByKey<BucketKey> by_bucket, plain;
    std::map<BucketKey, Uid> expected;
    std::vector<int64_t> next(4, 0);
    for (Uid u = 0; u < static_cast<Uid>(n); ++u) {
      // Four streams in turn at random, each with its own growing links.
      uint32_t b = rng() % 4;
      BucketKey key{b, rng() % 10 == 0 ? static_cast<int64_t>(rng() % 50) : next[b]++};
      by_bucket.add(key, u);
      plain.add(key, u);
      expected[key] = u;
    }
    by_bucket.seal_by_bucket(4, [](const BucketKey& k) { return k.bucket; });
    plain.seal();
    std::vector<BucketKey> queries;
    for (uint32_t b = 0; b < 5; ++b)
      for (int64_t v = -1; v < n / 2 + 60; ++v) queries.push_back({b, v});
    check_lookups(by_bucket, expected, queries);
    check_lookups(plain, expected, queries);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
