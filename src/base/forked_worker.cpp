#include "base/forked_worker.h"

#include <atomic>

namespace jarvis {
namespace {
std::atomic<bool> forked_worker{false};
}  // namespace

bool in_forked_worker() {
  return forked_worker.load(std::memory_order_relaxed);
}
void mark_forked_worker() {
  forked_worker.store(true, std::memory_order_relaxed);
}

}  // namespace jarvis
