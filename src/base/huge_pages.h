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
#include <memory>
#include <new>
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

// An allocator for vectors that grow large: from 2 MiB up, storage is mapped
// on its own at a 2 MiB boundary, its length rounded up to whole huge pages,
// and advised before its first touch, so every page of it can be huge
// (malloc's large chunks start 16 bytes into a 4 KiB page, which leaves up to
// 4 MiB of each array on 4 KiB pages). Smaller requests go to std::allocator.
template <class T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr size_t kHuge = size_t{2} << 20;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}  // NOLINT: rebinding

  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    size_t bytes = n * sizeof(T);
    if (bytes < kHuge) return std::allocator<T>().allocate(n);
    size_t length = rounded(bytes);
    void* raw =
        ::mmap(nullptr, length + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    auto begin = reinterpret_cast<uintptr_t>(raw);
    auto aligned = (begin + kHuge - 1) & ~(uintptr_t{kHuge} - 1);
    // The slack before and after the aligned range goes back at once.
    if (aligned > begin) ::munmap(raw, aligned - begin);
    size_t tail = begin + length + kHuge - (aligned + length);
    if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + length), tail);
    ::madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
    return reinterpret_cast<T*>(aligned);
  }
  void deallocate(T* p, size_t n) noexcept {
    size_t bytes = n * sizeof(T);
    if (bytes < kHuge) {
      std::allocator<T>().deallocate(p, n);
      return;
    }
    ::munmap(p, rounded(bytes));
  }

  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }

 private:
  static size_t rounded(size_t bytes) { return (bytes + kHuge - 1) & ~(kHuge - 1); }
};

}  // namespace jarvis
