#include "base/cache_prune.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

namespace jarvis {

namespace fs = std::filesystem;

namespace {

struct Pruned {
  std::vector<std::string> removed;
  uint64_t total_after = 0;  // the counted files' bytes once pruned
};

// Scans `dir`; when its counted files pass `trigger_bytes`, removes the
// oldest unprotected ones until the total is at most `target_bytes`.
Pruned prune(const fs::path& dir, uint64_t trigger_bytes, uint64_t target_bytes,
             const std::function<bool(const fs::path&)>& counts,
             const std::function<bool(const fs::path&)>& keep) {
  struct Entry {
    fs::path path;
    uint64_t bytes;
    fs::file_time_type written;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec) || e.is_symlink(ec) || !counts(e.path())) continue;
    uint64_t bytes = e.file_size(ec);
    if (ec) continue;
    auto written = e.last_write_time(ec);
    if (ec) continue;
    total += bytes;
    if (!keep(e.path())) entries.push_back({e.path(), bytes, written});
  }
  Pruned out;
  if (total > trigger_bytes) {
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.written < b.written; });
    for (const auto& e : entries) {
      if (total <= target_bytes) break;
      if (fs::remove(e.path, ec)) {
        total -= e.bytes;
        out.removed.push_back(e.path.string());
      }
    }
  }
  out.total_after = total;
  return out;
}

struct ScanState {
  uint64_t total_at_scan = 0;
  uint64_t written_since = 0;
  std::chrono::steady_clock::time_point scanned_at;
};

}  // namespace

std::vector<std::string> prune_cache_dir(const fs::path& dir, uint64_t budget_bytes,
                                         const std::function<bool(const fs::path&)>& counts,
                                         const std::function<bool(const fs::path&)>& keep) {
  return prune(dir, budget_bytes, budget_bytes, counts, keep).removed;
}

std::vector<std::string> prune_cache_dir_after_write(
    const fs::path& dir, uint64_t budget_bytes, uint64_t bytes_written,
    const std::function<bool(const fs::path&)>& counts,
    const std::function<bool(const fs::path&)>& keep) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kRescanAfter = std::chrono::minutes(1);
  static std::mutex mutex;
  static std::map<std::string, ScanState> states;  // one per cache directory
  const std::string key = dir.lexically_normal().string();
  {
    std::lock_guard lock(mutex);
    auto it = states.find(key);
    if (it != states.end()) {
      ScanState& s = it->second;
      s.written_since += bytes_written;
      bool may_pass = s.total_at_scan + s.written_since > budget_bytes;
      if (!may_pass && Clock::now() - s.scanned_at < kRescanAfter) return {};
    }
  }
  // Scanned outside the lock: two threads may both scan, which is only work.
  Pruned pruned = prune(dir, budget_bytes, budget_bytes - budget_bytes / 8, counts, keep);
  std::lock_guard lock(mutex);
  states[key] = ScanState{pruned.total_after, 0, Clock::now()};
  return pruned.removed;
}

}  // namespace jarvis
