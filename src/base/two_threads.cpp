#include "base/two_threads.h"

#include <atomic>
#include <future>
#include <system_error>
#include <thread>

namespace jarvis {

void run_on_two_threads(const std::vector<std::function<void()>>& tasks) {
  std::atomic<size_t> next{0};
  auto take_tasks = [&] {
    try {
      for (size_t k = next++; k < tasks.size(); k = next++) tasks[k]();
    } catch (...) {
      next = tasks.size();
      throw;
    }
  };
  std::future<void> helper;
  if (std::thread::hardware_concurrency() > 1 && tasks.size() > 1) {
    try {
      helper = std::async(std::launch::async, take_tasks);
    } catch (const std::system_error&) {
      // No thread to spare: this thread takes every task.
    }
  }
  try {
    take_tasks();
  } catch (...) {
    if (helper.valid()) helper.wait();
    throw;
  }
  if (helper.valid()) helper.get();
}

}  // namespace jarvis
