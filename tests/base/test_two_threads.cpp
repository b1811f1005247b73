// run_on_two_threads: every task runs exactly once, a task's failure comes
// back to the caller, and an empty list is a no-op.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/two_threads.h"

TEST_CASE("run_on_two_threads runs every task once") {
  for (size_t count : {0u, 1u, 2u, 3u, 100u}) {
    std::vector<std::atomic<int>> runs(count);
    std::vector<std::function<void()>> tasks;
    for (size_t k = 0; k < count; ++k) tasks.push_back([&runs, k] { ++runs[k]; });
    jarvis::run_on_two_threads(tasks);
    for (size_t k = 0; k < count; ++k) CHECK(runs[k] == 1);
  }
}

TEST_CASE("run_on_two_threads rethrows a failing task's error and stops taking tasks") {
  std::atomic<int> ran{0};
  std::vector<std::function<void()>> tasks{[] { throw std::runtime_error("task failed"); }};
  for (int k = 0; k < 200; ++k)
    tasks.push_back([&ran] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++ran;
    });
  CHECK_THROWS_WITH_AS(jarvis::run_on_two_threads(tasks), "task failed", std::runtime_error);
  // The failing task is taken first; the other thread may have taken a few
  // tasks before the failure stopped it, never all of them.
  CHECK(ran < 200);
}
