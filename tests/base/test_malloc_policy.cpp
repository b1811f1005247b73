// keep_freed_memory_for_reuse: after it, a block under 32 MiB comes from
// malloc's arena instead of a mapping of its own, and freeing it leaves the
// memory in the arena (the next block reuses it) instead of unmapping it.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "base/malloc_policy.h"
#include "sanitizer.h"

// Sanitizers bring their own malloc, which mallopt does not steer (the
// sanitized build compiles the tests uninstrumented: JARVIS_ASAN says so).
#if JARVIS_ASAN
#define JARVIS_OWN_MALLOC 1
#endif
#if defined(__has_feature)
#if __has_feature(memory_sanitizer)
#define JARVIS_OWN_MALLOC 1
#endif
#endif

#if defined(__GLIBC__) && !defined(JARVIS_OWN_MALLOC)
#include <malloc.h>

TEST_CASE("malloc policy: blocks up to 32 MiB come from the arena and stay after a free") {
  jarvis::keep_freed_memory_for_reuse();
  constexpr size_t kBlock = size_t{24} << 20;  // over glibc's default mmap threshold (128 KiB)
  size_t mapped_before = mallinfo2().hblkhd;   // bytes in blocks with a mapping of their own
  void* block = std::malloc(kBlock);
  REQUIRE(block != nullptr);
  std::memset(block, 1, kBlock);
  CHECK(mallinfo2().hblkhd == mapped_before);  // not mapped on its own
  size_t arena_with_block = mallinfo2().arena;
  CHECK(arena_with_block >= kBlock);
  std::free(block);
  // The freed block stays in the arena (no trim) for the next allocations.
  CHECK(mallinfo2().arena == arena_with_block);
  CHECK(mallinfo2().fordblks >= kBlock);
}
#endif
