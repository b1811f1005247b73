#include "base/cache_prune.h"

#include <algorithm>

namespace jarvis {

namespace fs = std::filesystem;

std::vector<std::string> prune_cache_dir(const fs::path& dir, uint64_t budget_bytes,
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
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.written < b.written; });
  std::vector<std::string> removed;
  for (const auto& e : entries) {
    if (total <= budget_bytes) break;
    if (fs::remove(e.path, ec)) {
      total -= e.bytes;
      removed.push_back(e.path.string());
    }
  }
  return removed;
}

}  // namespace jarvis
