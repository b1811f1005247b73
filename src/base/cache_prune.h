// Bounds a cache directory: the least recently written files go first until
// the directory's files add up to at most a budget. Shared by the trace
// snapshots and the per-run sweep cache.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace jarvis {

// Counts the regular files of `dir` (not symlinks) that `counts` accepts,
// then removes the oldest of them (by modification time) that `keep` does
// not protect until their total is at most budget_bytes. Returns the paths
// removed. Unreadable entries are left alone.
std::vector<std::string> prune_cache_dir(
    const std::filesystem::path& dir, uint64_t budget_bytes,
    const std::function<bool(const std::filesystem::path&)>& counts,
    const std::function<bool(const std::filesystem::path&)>& keep);

}  // namespace jarvis
