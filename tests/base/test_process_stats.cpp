// process_cpu_s and peak_rss_mb against work the test does itself: CPU time
// spent spinning shows up in process_cpu_s, and pages written show up in the
// peak resident set.
#include <doctest/doctest.h>

#include <sys/mman.h>

#include <time.h>
#include <cstring>

#include "base/process_stats.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

TEST_CASE("process stats: CPU seconds grow by what this thread spends") {
  // This thread's own CPU clock, independent of getrusage, decides how long
  // to spin: 150 ms of CPU however busy the machine is.
  auto thread_cpu_s = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
  };
  double before = jarvis::process_cpu_s();
  CHECK(before > 0);
  double start = thread_cpu_s();
  volatile unsigned long sink = 0;
  while (thread_cpu_s() - start < 0.15) sink = sink + 1;
  double spent = jarvis::process_cpu_s() - before;
  // The process total holds this thread's 150 ms (other threads of the test
  // binary can only add to it); a little slack for the clocks' accounting.
  CHECK(spent >= 0.14);
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

}  // namespace JARVIS_TEST_FILE
}  // namespace
