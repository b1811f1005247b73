// A child forked while other threads allocate must be able to allocate
// (the MCP server forks a worker per call while its transport's threads run).
// glibc's malloc is fork-safe; the AddressSanitizer of Debian 12's clang 14
// is not without base/forked_worker's handlers: about 1 child in 70 of this
// test waited forever on a lock of the sanitizer's allocator or thread
// registry that an allocating thread held at the fork (measured 2026-12-02:
// 7 of 500 children of a small program without the handlers, 0 of 1,000 with them).
// One lock of that runtime no handler can take: the quarantine's spin lock,
// taken by every drain of a thread's quarantined frees (past 1 MiB of them,
// at the thread's exit, and, once the quarantine is full, while its oldest
// chunks are recycled). A parent thread holding it at the fork leaves the
// child spinning forever in its first drain: in the sanitizer suite, with
// the quarantine full of the tests before, 1 child of 150 in two runs of
// three (gdb: Quarantine::Drain -> StaticSpinMutex::LockSlow). So under ASan
// the children are forked in a copy of this test run with the quarantine off
// (a drain is then a splice of empty lists): this test holds the handlers to
// the locks they take; the quarantine's is a limit of the runtime
// (docs/security.md).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "base/forked_worker.h"
#include "sanitizer.h"
#include "test_loader_support.h"

namespace {
namespace JARVIS_TEST_FILE {

using namespace std::chrono_literals;

// What a worker does first: allocations of every size class, and a thread.
[[noreturn]] void allocate_and_exit() {
  for (int k = 0; k < 20; ++k) {
    void* block = std::malloc(size_t{16} << k);
    if (!block) ::_exit(2);
    std::memset(block, 1, 16);
    std::free(block);
  }
  std::thread([] { std::free(std::malloc(100)); }).join();
  ::_exit(0);
}

// Whether the child ended within `limit` (killed and reaped if not).
bool ended_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (std::chrono::steady_clock::now() < until) {
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    std::this_thread::sleep_for(1ms);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return false;
}

// Under ASan with the quarantine on: this test case again, in a copy of
// this binary whose quarantine is off; its exit status and summary checked.
bool ran_without_quarantine() {
#if JARVIS_ASAN
  const char* options = std::getenv("ASAN_OPTIONS");
  const std::string own = options ? options : "";
  if (own.find("quarantine_size_mb=0") != std::string::npos) return false;
  const jarvis::loader_test::CliResult run = jarvis::loader_test::run_shell(
      "ASAN_OPTIONS='" + own + (own.empty() ? "" : ":") + "quarantine_size_mb=0' /proc/" +
      std::to_string(::getpid()) + "/exe -tc='fork with threads: every child*'");
  INFO(run.output);
  CHECK(run.exit_code == 0);
  CHECK(run.output.find("1 passed") != std::string::npos);
  return true;
#else
  return false;
#endif
}

TEST_CASE("fork with threads: every child allocates, the sanitizer's locks held across the fork") {
  CHECK(jarvis::sanitizer_locks_held_across_fork() == bool(JARVIS_ASAN));
  if (ran_without_quarantine()) return;
  std::atomic<bool> stop{false};
  std::vector<std::thread> allocating;
  for (unsigned seed = 1; seed <= 2; ++seed)
    allocating.emplace_back([&stop, seed] {
      unsigned x = seed;
      while (!stop.load(std::memory_order_relaxed)) {
        x = x * 1103515245u + 12345u;
        void* block = std::malloc(size_t{16} << (x % 16));
        if (block) std::memset(block, 1, 16);
        std::free(block);
        std::thread([] {}).join();  // the thread registry's lock, too
      }
    });
  constexpr int kForks = 150;
  int stuck = 0;
  for (int i = 0; i < kForks; ++i) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) allocate_and_exit();
    if (!ended_within(pid, 10s)) ++stuck;
  }
  stop = true;
  for (auto& t : allocating) t.join();
  CHECK(stuck == 0);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
