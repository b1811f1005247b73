#pragma once
// run_on_two_threads: independent jobs of uneven cost (a call tree's passes,
// a report's sheet groups) on this thread and, with a second core, one more.

#include <functional>
#include <future>
#include <vector>

namespace jarvis {

// Runs every task once: this thread and a helper (when there is a second
// core and more than one task) each take the next task not yet taken, so
// uneven costs even out; give the costliest first. A failing task stops both
// threads from taking more; its error is rethrown once both have stopped.
void run_on_two_threads(const std::vector<std::function<void()>>& tasks);

// The end of one task of a run_on_two_threads call, which a later task of
// the same call may wait for. Tasks are taken in list order, so the awaited
// task has been taken by then (by the other thread, or already run on this
// one): the wait cannot deadlock. A failure of the awaited task is rethrown
// to its waiters.
class TaskLatch {
 public:
  TaskLatch() : ready_(done_.get_future().share()) {}
  template <class F>
  void run(F&& task) {
    try {
      task();
    } catch (...) {
      done_.set_exception(std::current_exception());
      throw;
    }
    done_.set_value();
  }
  void wait() const { ready_.get(); }

 private:
  std::promise<void> done_;
  std::shared_future<void> ready_;
};

}  // namespace jarvis
