#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

// No test (nor a jarvis child process it starts) writes trace snapshots into
// $HOME: snapshots are off unless a test turns them on with its own cache
// directory (tests/trace/test_snapshot.cpp).
const bool kSnapshotsOff = [] {
  ::setenv("JARVIS_NO_SNAPSHOT", "1", 0);
  return true;
}();

// The write ledger (base/output_guard.h) of this test run and the jarvis
// processes it starts: a directory of its own, never the user's cache.
const bool kLedgerOwnDir = [] {
  if (std::getenv("JARVIS_CACHE_DIR")) return false;
  std::string dir = (std::filesystem::temp_directory_path() / "jarvis-tests-cache-XXXXXX").string();
  if (!::mkdtemp(dir.data())) return false;
  ::setenv("JARVIS_CACHE_DIR", dir.c_str(), 0);
  static const std::string removed_at_exit = dir;
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(removed_at_exit, ec);
  });
  return true;
}();

}  // namespace
