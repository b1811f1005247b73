#include "base/malloc_policy.h"

#include <cstddef>  // defines __GLIBC__ where the C library is glibc

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#include <unistd.h>
#endif

namespace jarvis {

namespace {

constexpr const char* kTunedMarker = "JARVIS_MALLOC_TUNED";
constexpr const char* kHugeTunable = "glibc.malloc.hugetlb";

bool sanitized_build() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

void set_or_unset(const char* name, const std::optional<std::string>& value) {
  if (value)
    ::setenv(name, value->c_str(), 1);
  else
    ::unsetenv(name);
}

}  // namespace

namespace malloc_tuning {

std::optional<std::string> tunables_with_huge_pages(const char* user) {
  if (user && std::strstr(user, kHugeTunable)) return std::nullopt;  // the user's choice stands
  return (user && *user ? std::string(user) + ":" : std::string()) + kHugeTunable + "=1";
}

std::string marker_of(const char* user) {
  return user ? std::string("=") + user : "-";
}

std::optional<std::string> user_tunables_of(const std::string& marker) {
  if (marker.rfind('=', 0) == 0) return marker.substr(1);
  return std::nullopt;
}

}  // namespace malloc_tuning

void tune_malloc_at_start(char** argv) {
#if defined(__GLIBC__)
  if (sanitized_build()) return;
  if (const char* off = std::getenv("JARVIS_MALLOC_TUNING"); off && std::strcmp(off, "0") == 0)
    return;
  // One arena: the analyses' threads allocate from the heap that huge pages
  // back, not from per-thread heaps of their own (set whether or not the
  // exec below happens; before any thread exists).
  mallopt(M_ARENA_MAX, 1);
  if (const char* marker = std::getenv(kTunedMarker)) {  // the run again: the user's back
    set_or_unset("GLIBC_TUNABLES", malloc_tuning::user_tunables_of(marker));
    ::unsetenv(kTunedMarker);
    return;
  }
  const char* given = std::getenv("GLIBC_TUNABLES");
  const std::optional<std::string> user = given ? std::optional<std::string>(given) : std::nullopt;
  const auto tunables = malloc_tuning::tunables_with_huge_pages(given);
  if (!tunables) return;
  if (::setenv(kTunedMarker, malloc_tuning::marker_of(given).c_str(), 1) != 0 ||
      ::setenv("GLIBC_TUNABLES", tunables->c_str(), 1) != 0)
    return;
  ::execv("/proc/self/exe", argv);
  // No exec (no /proc, a sandbox): run as it is, with the environment as it was.
  set_or_unset("GLIBC_TUNABLES", user);
  ::unsetenv(kTunedMarker);
#else
  (void)argv;
#endif
}

namespace {

// 32 MiB is the largest threshold glibc accepts (DEFAULT_MMAP_THRESHOLD_MAX
// on 64-bit); larger blocks (a big trace's event array) keep their own
// mapping, where huge pages are asked for (base/huge_pages.h). Setting it
// also turns off glibc's moving of the threshold.
constexpr int kMmapThreshold = 32 << 20;

}  // namespace

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  // Free memory at the top of an arena is kept, up to any size.
  mallopt(M_TRIM_THRESHOLD, -1);
#endif
}

void reuse_freed_memory_in_a_server() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  // Twice the threshold: where glibc's own moving would end up, so that a
  // freed block of the largest size from the arena is kept at its top.
  mallopt(M_TRIM_THRESHOLD, 2 * kMmapThreshold);
#endif
}

}  // namespace jarvis
