// run_on_two_threads: every task runs exactly once, a task's failure comes
// back to the caller, and an empty list is a no-op; a TaskLatch hands one
// task's result, or its failure, to a later task of the same run.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/two_threads.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

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

TEST_CASE("TaskLatch: a later task sees the awaited task's result, or its error") {
  for (int round = 0; round < 50; ++round) {
    // The awaited task is slow, so the waiter, taken by the other thread,
    // usually starts first and must wait.
    int produced = 0, seen = -1;
    jarvis::TaskLatch done;
    jarvis::run_on_two_threads({[&] {
                                  done.run([&] {
                                    std::this_thread::sleep_for(std::chrono::microseconds(200));
                                    produced = 42;
                                  });
                                },
                                [&] {
                                  done.wait();
                                  seen = produced;
                                }});
    CHECK(seen == 42);
  }
  jarvis::TaskLatch failed;
  std::atomic<bool> waiter_ran_on{false};
  CHECK_THROWS_WITH_AS(jarvis::run_on_two_threads(
                           {[&] { failed.run([] { throw std::runtime_error("awaited failed"); }); },
                            [&] {
                              failed.wait();  // rethrows: the waiter does not go on
                              waiter_ran_on = true;
                            }}),
                       "awaited failed", std::runtime_error);
  CHECK_FALSE(waiter_ran_on);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
