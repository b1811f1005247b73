#include "sweep/sweep_store.h"

#include <fmt/format.h>

namespace jarvis::sweep {

SweepStore& SweepStore::global() {
  static SweepStore store;
  return store;
}

std::string SweepStore::add(std::shared_ptr<const Sweep> sweep) {
  std::lock_guard lock(mutex_);
  std::string handle = fmt::format("s{}", next_id_++);
  by_handle_[handle] = std::move(sweep);
  return handle;
}

std::shared_ptr<const Sweep> SweepStore::get(const std::string& handle) const {
  std::lock_guard lock(mutex_);
  auto it = by_handle_.find(handle);
  return it == by_handle_.end() ? nullptr : it->second;
}

}  // namespace jarvis::sweep
