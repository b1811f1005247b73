// Loaded sweeps by handle ("s1", "s2", ...) for the MCP tools. A sweep holds
// only its runs' derived tables (no trace), so handles are cheap to keep; they
// live for the server process and are shared by its sessions like the files
// they name.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "sweep/sweep.h"

namespace jarvis::sweep {

class SweepStore {
 public:
  static SweepStore& global();

  std::string add(std::shared_ptr<const Sweep> sweep);
  // nullptr when unknown.
  std::shared_ptr<const Sweep> get(const std::string& handle) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const Sweep>> by_handle_;
  uint64_t next_id_ = 1;
};

}  // namespace jarvis::sweep
