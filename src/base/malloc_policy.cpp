#include "base/malloc_policy.h"

#include <cstddef>  // defines __GLIBC__ where the C library is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace jarvis {

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  // 32 MiB is the largest threshold glibc accepts (DEFAULT_MMAP_THRESHOLD_MAX
  // on 64-bit); larger blocks (a big trace's event array) keep their own
  // mapping, where huge pages are asked for (base/huge_pages.h).
  constexpr int kMmapThreshold = 32 << 20;
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  // Free memory at the top of an arena is kept, up to any size.
  mallopt(M_TRIM_THRESHOLD, -1);
#endif
}

}  // namespace jarvis
