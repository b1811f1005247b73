// The amortised cache bound (issue 62 point 3): a process that keeps writing
// into a cache scans the directory only when its own writes may have passed
// the budget, then prunes to 7/8 of it, so n writes cost O(n) and not O(n^2).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/cache_prune.h"
#include "test_loader_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
namespace fs = std::filesystem;

namespace {

void write_bytes(const fs::path& p, size_t n, int hours_old) {
  std::ofstream(p, std::ios::binary) << std::string(n, 'x');
  fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::hours(hours_old));
}

size_t dir_bytes(const fs::path& dir) {
  size_t total = 0;
  for (const auto& e : fs::directory_iterator(dir)) total += e.file_size();
  return total;
}

bool any(const fs::path&) {
  return true;
}
bool none(const fs::path&) {
  return false;
}

}  // namespace

TEST_CASE("cache prune after a write: scans only when the process's writes may pass the budget") {
  loader_test::TempDir tmp;
  const fs::path dir = tmp.path / "cache";
  fs::create_directories(dir);
  constexpr uint64_t kBudget = 8000;
  // The first write of the process scans: 10 files of 1,000 bytes, oldest first.
  for (int k = 0; k < 10; ++k) write_bytes(dir / fmt::format("f{}", k), 1000, 100 - k);
  auto removed = prune_cache_dir_after_write(dir, kBudget, 1000, any, none);
  // Pruned to 7/8 of the budget (7,000 bytes), oldest first.
  CHECK(removed.size() == 3);
  CHECK_FALSE(fs::exists(dir / "f0"));
  CHECK_FALSE(fs::exists(dir / "f2"));
  CHECK(fs::exists(dir / "f3"));
  CHECK(dir_bytes(dir) == 7000);

  // A file written behind the process's back is not seen while the process's
  // own writes (500 bytes) keep its estimate within the budget: no scan.
  write_bytes(dir / "outside", 5000, 200);
  CHECK(prune_cache_dir_after_write(dir, kBudget, 500, any, none).empty());
  CHECK(fs::exists(dir / "outside"));
  // 600 more bytes pass the budget in its estimate (7,000 + 1,100): it scans,
  // finds 12,000 bytes and removes the oldest down to 7,000.
  removed = prune_cache_dir_after_write(dir, kBudget, 600, any, none);
  CHECK_FALSE(fs::exists(dir / "outside"));
  CHECK(dir_bytes(dir) <= 7000);
  CHECK(removed.size() == 1);  // "outside" alone frees 5,000 of the 5,000 needed

  // A smaller budget given later is honoured at once (the estimate passes it).
  removed = prune_cache_dir_after_write(dir, 2000, 0, any, none);
  CHECK(dir_bytes(dir) <= 2000 - 2000 / 8);
  CHECK_FALSE(removed.empty());
}

TEST_CASE("cache prune after a write: the file just written is kept even over the budget") {
  loader_test::TempDir tmp;
  const fs::path dir = tmp.path / "cache";
  fs::create_directories(dir);
  write_bytes(dir / "old", 3000, 2);
  write_bytes(dir / "new", 3000, 0);
  auto removed = prune_cache_dir_after_write(dir, 1000, 3000, any,
                                             [&](const fs::path& p) { return p == dir / "new"; });
  CHECK(removed == std::vector<std::string>{(dir / "old").string()});
  CHECK(fs::exists(dir / "new"));
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
