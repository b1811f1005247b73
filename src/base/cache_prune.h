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

// The same after this process wrote `bytes_written` into `dir`, at amortised
// cost: a scan lists the whole directory, so one per write made a sweep of n
// runs O(n^2) (10,000 runs: 470 s, issue 62). The process remembers the total
// its last scan found and the bytes it wrote since, and scans again only when
// that sum may pass the budget, or when the last scan is older than a minute
// (other processes write into the same cache). A scan over budget prunes to
// 7/8 of it, so the next one is due only after budget/8 more bytes.
std::vector<std::string> prune_cache_dir_after_write(
    const std::filesystem::path& dir, uint64_t budget_bytes, uint64_t bytes_written,
    const std::function<bool(const std::filesystem::path&)>& counts,
    const std::function<bool(const std::filesystem::path&)>& keep);

}  // namespace jarvis
