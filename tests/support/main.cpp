#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "golden.h"

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

// The test files that read ../shared (the real traces and their TraceLens
// references, which a fresh clone does not have): the ones naming it, its
// helpers or an MCP harness rooted there. Read from the sources, so a new test
// file is classified by what it uses.
std::vector<std::string> files_reading_shared() {
  static const std::regex uses_shared(
      R"(shared_dir\(\)|JARVIS_SHARED_DIR|conformance_trace\(|conformance_dirs\(|)"
      R"(shared_root_options|Harness [a-z_]+(;|\{\}))");
  std::vector<std::string> files;
  const std::filesystem::path tests = std::filesystem::path(JARVIS_SOURCE_DIR) / "tests";
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(tests, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const auto& p = it->path();
    if (p.extension() != ".cpp" || p.parent_path().filename() == "support") continue;
    std::ifstream in(p);
    std::stringstream text;
    text << in.rdbuf();
    const std::string source = text.str();
    if (std::regex_search(source, uses_shared))
      files.push_back(
          std::filesystem::relative(p, std::filesystem::path(JARVIS_SOURCE_DIR)).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

// Without ../shared (a fresh clone) the suite runs the tests that need only
// the repository (its examples/ and tests/ fixtures) and names what it left out.
int main(int argc, char** argv) {
  doctest::Context context;
  const std::string shared = jarvis::golden::shared_dir();
  std::error_code ec;
  if (!std::filesystem::is_directory(shared, ec)) {
    const std::vector<std::string> files = files_reading_shared();
    std::string filter;
    for (const std::string& f : files) filter += (filter.empty() ? "*" : ",*") + f;
    if (!filter.empty()) context.addFilter("source-file-exclude", filter.c_str());
    std::fprintf(stderr,
                 "jarvis_tests: %s not found (a fresh clone has no ../shared): the %zu test "
                 "files that read its real traces are skipped; place the shared data beside the "
                 "repository (or set JARVIS_SHARED_DIR) to run them.\n",
                 shared.c_str(), files.size());
  }
  context.applyCommandLine(argc, argv);
  return context.run();
}
