// Transparent huge pages for the per-event arrays.
//
// Fresh anonymous memory costs a page fault per 4 KiB page on first touch;
// on a virtual machine each fault goes through the hypervisor and costs about
// as much as the work done on the page (a 4M-event call tree fills ~160 MB of
// per-event arrays: 40k faults). Asking for huge pages before the first touch
// turns 512 faults into one. Systems with THP set to "never" ignore the advice.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace jarvis {

// Advises the 2 MiB-aligned part of [data, data + bytes); smaller ranges hold
// no whole huge page and are left alone.
inline void advise_huge_pages(void* data, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  auto begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  auto end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHuge - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

// v = n copies of value, its storage advised before it is first written.
template <class T>
void assign_on_huge_pages(std::vector<T>& v, size_t n, const T& value) {
  std::vector<T>().swap(v);  // fresh storage: the advice must precede the first touch
  v.reserve(n);
  advise_huge_pages(v.data(), n * sizeof(T));
  v.assign(n, value);
}

}  // namespace jarvis
