#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
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

// The folders of ../shared a test source may name (its layout; the
// repository holds a copy of some of them, tests/data/shared/README.md).
const char* const kSharedFolders[] = {
    "conformance", "ab_pairs",   "hw_pairs",        "sweeps", "rocprof", "nsys",
    "jax",         "nccl",       "legacy",          "evals",  "spec",    "seeds",
    "bench",       "mcp-client", "mcp-conformance", "hooks"};

struct SkippedFiles {
  std::vector<std::string> files;  // tests/<folder>/test_x.cpp
  std::set<std::string> folders;   // the folders of ../shared they need
};

// The test files that need folders of ../shared the repository's copy lacks:
// of the files reading ../shared (naming it, its helpers or an MCP harness
// rooted there), those that name such a folder. Read from the sources, so a
// new test file is classified by what it uses.
SkippedFiles files_needing_missing_shared(const std::string& copy) {
  static const std::regex uses_shared(
      R"(shared_dir\(\)|JARVIS_SHARED_DIR|conformance_trace\(|conformance_dirs\(|)"
      R"(shared_root_options|Harness [a-z_]+(;|\{\}))");
  SkippedFiles out;
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
    if (!std::regex_search(source, uses_shared)) continue;
    // The folders it names, its own support headers' included (a helper such
    // as test_sweep_support.h's h100() names the sweep it reads).
    std::string named_in = source;
    static const std::regex support_include(R"re(#include "([a-z_]+\.h)")re");
    for (auto m = std::sregex_iterator(source.begin(), source.end(), support_include);
         m != std::sregex_iterator(); ++m) {
      std::ifstream header(tests / "support" / (*m)[1].str());
      std::stringstream header_text;
      header_text << header.rdbuf();
      named_in += header_text.str();
    }
    std::set<std::string> missing;
    for (const char* folder : kSharedFolders) {
      const std::string name = folder;
      bool named = false;
      for (const char* before : {"\"", "/"})
        for (const char* after : {"\"", "/"})
          named = named || named_in.find(before + name + after) != std::string::npos;
      if (name == "conformance")
        named = named || named_in.find("conformance_trace(") != std::string::npos ||
                named_in.find("conformance_dirs(") != std::string::npos;
      if (named && !std::filesystem::is_directory(std::filesystem::path(copy) / name, ec))
        missing.insert(name);
    }
    if (missing.empty()) continue;
    out.files.push_back(
        std::filesystem::relative(p, std::filesystem::path(JARVIS_SOURCE_DIR)).string());
    out.folders.insert(missing.begin(), missing.end());
  }
  std::sort(out.files.begin(), out.files.end());
  return out;
}

// doctest's console reporter, except that a shard of the suite
// (tests/run_shard.sh: --first/--last) prints its own counts. doctest 2.4
// counts every test case that passes the filters as run and passed, and
// those outside the shard's range as skipped, so each shard printed the whole
// suite's totals. Here the test cases line counts those this run started;
// the test cases the filters leave out are the suite's, counted by the first
// shard only, so that the shards' lines add up to the suite's.
struct ShardConsoleReporter : doctest::ConsoleReporter {
  unsigned started = 0;
  using doctest::ConsoleReporter::ConsoleReporter;
  void test_case_start(const doctest::TestCaseData& in) override {
    ++started;
    doctest::ConsoleReporter::test_case_start(in);
  }
  void test_run_end(const doctest::TestRunStats& p) override {
    if (started >= p.numTestCasesPassingFilters || opt.count || opt.list_test_cases) {
      doctest::ConsoleReporter::test_run_end(p);
      return;
    }
    doctest::TestRunStats own = p;
    const unsigned filtered_out = p.numTestCases - p.numTestCasesPassingFilters;
    own.numTestCasesPassingFilters = started;
    own.numTestCases = started + (opt.first <= 1 ? filtered_out : 0);
    doctest::ConsoleReporter::test_run_end(own);
    std::fprintf(stdout,
                 "[doctest] this shard: test cases %u-%u of the %u that pass the filters%s\n",
                 std::max(opt.first, 1u), std::min(opt.last, p.numTestCasesPassingFilters),
                 p.numTestCasesPassingFilters,
                 filtered_out == 0 ? ""
                 : opt.first <= 1  ? "; the skipped are those the filters leave out of the suite"
                                  : "; those the filters leave out are counted by the first shard");
    std::fflush(stdout);
  }
};
DOCTEST_REGISTER_REPORTER("shard-console", 0, ShardConsoleReporter);

// Whether the command line names its reporters (-r=, --reporters=, and
// doctest's -dt- prefixed forms).
bool names_reporters(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) == 0) arg = arg.substr(1);
    if (arg.rfind("-dt-", 0) == 0) arg = "-" + arg.substr(4);
    if (arg.rfind("-r=", 0) == 0 || arg.rfind("-reporters=", 0) == 0) return true;
  }
  return false;
}

}  // namespace

// Without ../shared (a fresh clone) the suite runs on what the repository
// holds (examples/, the fixtures in tests/ and its copy of part of ../shared)
// and names what it left out.
int main(int argc, char** argv) {
  doctest::Context context;
  const std::string configured = jarvis::golden::configured_shared_dir();
  std::error_code ec;
  if (!std::filesystem::is_directory(configured, ec)) {
    const std::string copy = jarvis::golden::repository_shared_copy();
    std::set<std::string> held;
    for (const auto& entry : std::filesystem::directory_iterator(copy, ec))
      if (entry.is_directory()) held.insert(entry.path().filename().string());
    const SkippedFiles skipped = files_needing_missing_shared(copy);
    std::string filter;
    for (const std::string& f : skipped.files) filter += (filter.empty() ? "*" : ",*") + f;
    if (!filter.empty()) context.addFilter("source-file-exclude", filter.c_str());
    std::fprintf(stderr,
                 "jarvis_tests: %s not found (a fresh clone has no ../shared): the tests run on "
                 "the repository's copy of part of it (tests/data/shared: %s); the %zu test "
                 "files that need its other folders (%s) are skipped; place the shared data "
                 "beside the repository (or set JARVIS_SHARED_DIR) to run them.\n",
                 configured.c_str(), fmt::format("{}", fmt::join(held, ", ")).c_str(),
                 skipped.files.size(), fmt::format("{}", fmt::join(skipped.folders, ", ")).c_str());
  }
  if (!names_reporters(argc, argv)) context.setOption("reporters", "shard-console");
  context.applyCommandLine(argc, argv);
  return context.run();
}
