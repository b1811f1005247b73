// process_cpu_s and peak_rss_mb against work the test does itself: CPU time
// spent spinning shows up in process_cpu_s, and pages written show up in the
// peak resident set.
#include <doctest/doctest.h>

#include <sys/mman.h>

#include <chrono>
#include <cstring>

#include "base/process_stats.h"

TEST_CASE("process stats: CPU seconds grow by the time this thread spins") {
  double before = jarvis::process_cpu_s();
  CHECK(before > 0);
  auto start = std::chrono::steady_clock::now();
  volatile unsigned long sink = 0;
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(200)) sink = sink + 1;
  double spent = jarvis::process_cpu_s() - before;
  // At least most of the 200 ms of wall time the loop ran on a core (other
  // threads of the test binary can only add to it).
  CHECK(spent >= 0.1);
}

TEST_CASE("process stats: the peak resident set counts pages the process wrote") {
  constexpr size_t kBytes = size_t{96} << 20;
  // Beyond any earlier peak of this process: the peak can only rise by what
  // is resident on top of what is resident now.
  double before = jarvis::peak_rss_mb();
  CHECK(before > 0);
  void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(p != MAP_FAILED);
  std::memset(p, 1, kBytes);
  double after = jarvis::peak_rss_mb();
  munmap(p, kBytes);
  // The 96 MB written are resident together with everything resident before
  // them, so the peak is at least that sum unless the earlier peak was higher.
  CHECK(after >= 96.0);
  CHECK(after >= before);
}
