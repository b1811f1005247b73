// HugePageAllocator: large vectors are mapped at a 2 MiB boundary (so every
// page of them can be huge), small ones come from std::allocator, and
// growing across the threshold keeps the elements.
#include <doctest/doctest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "base/huge_pages.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::HugePageAllocator;

namespace {

constexpr size_t kHuge = size_t{2} << 20;

bool huge_aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % kHuge == 0;
}

}  // namespace

TEST_CASE("huge page allocator: large storage starts on a 2 MiB boundary") {
  std::vector<uint64_t, HugePageAllocator<uint64_t>> v;
  v.reserve(3 * kHuge / sizeof(uint64_t) + 5);  // 6 MiB and a bit: rounded up to 8 MiB
  CHECK(huge_aligned(v.data()));
  // The whole rounded length is mapped: writing the last element is fine.
  v.resize(v.capacity());
  v.back() = 7;
  CHECK(v.back() == 7);
}

TEST_CASE("huge page allocator: small storage comes from the ordinary heap") {
  // Under the sanitizers, handing a heap pointer to munmap (or a mapping to
  // free) is reported: both paths are taken here and in the next case.
  std::vector<uint32_t, HugePageAllocator<uint32_t>> v(1000, 3);
  CHECK(std::accumulate(v.begin(), v.end(), uint64_t{0}) == 3000);
  v.reserve(kHuge);  // 8 MiB of uint32_t: mapped
  CHECK(huge_aligned(v.data()));
  CHECK(std::accumulate(v.begin(), v.end(), uint64_t{0}) == 3000);
}

TEST_CASE("huge page allocator: growing across the threshold and back keeps the elements") {
  std::vector<uint32_t, HugePageAllocator<uint32_t>> v;
  const uint32_t n = kHuge / sizeof(uint32_t) * 2;  // 4 MiB of elements
  for (uint32_t i = 0; i < n; ++i) v.push_back(i);
  CHECK(huge_aligned(v.data()));
  uint64_t expected = uint64_t{n} * (n - 1) / 2;
  CHECK(std::accumulate(v.begin(), v.end(), uint64_t{0}) == expected);
  v.resize(100);
  v.shrink_to_fit();  // back to the heap
  CHECK(v.size() == 100);
  CHECK(v[99] == 99);
  std::vector<uint32_t, HugePageAllocator<uint32_t>> copy = v;
  CHECK(copy == v);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
