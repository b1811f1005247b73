// Issue 50, what a new user meets: TraceLens's manifest paths,
// counts that read right, other profilers' files named.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "security_support.h"
#include "test_loader_support.h"

namespace fs = std::filesystem;
using jarvis::loader_test::shell_quote;
using jarvis::testing::read_text;
using jarvis::testing::ScratchDir;

namespace {

struct Output {
  int exit_code = -1;
  std::string text;  // stdout and stderr
};

Output run_in(const fs::path& dir, const std::string& args) {
  std::string cmd =
      "cd " + shell_quote(dir) + " && " + std::string(JARVIS_BINARY) + " " + args + " 2>&1";
  Output out;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.text.append(buf, n);
  int status = pclose(p);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

}  // namespace

TEST_SUITE("cli_new_user") {
  TEST_CASE("issue 50: prepare's manifest paths: '.' as TraceLens records it, no '//'") {
    ScratchDir dir;
    jarvis::testing::copy_example_trace(dir / "trace.json.gz");
    // TraceLens's own run with --output-dir . records "category_data/..."
    // (../shared/conformance/*/category_data/category_manifest.json).
    Output out = run_in(dir.path, "prepare trace.json.gz --out .");
    REQUIRE_MESSAGE(out.exit_code == 0, out.text);
    auto manifest =
        nlohmann::json::parse(read_text(dir / "category_data" / "category_manifest.json"));
    REQUIRE(!manifest["categories"].empty());
    for (const auto& c : manifest["categories"])
      if (c.contains("csv_file") && c["csv_file"].is_string())
        CHECK(c["csv_file"].get<std::string>().rfind("category_data/", 0) == 0);
    // A directory given with its trailing slash is joined without doubling it.
    out = run_in(dir.path, "prepare trace.json.gz --out sub/");
    REQUIRE_MESSAGE(out.exit_code == 0, out.text);
    manifest =
        nlohmann::json::parse(read_text(dir / "sub" / "category_data" / "category_manifest.json"));
    size_t checked = 0;
    for (const auto& c : manifest["categories"])
      if (c.contains("csv_file") && c["csv_file"].is_string()) {
        CHECK(c["csv_file"].get<std::string>().rfind("sub/category_data/", 0) == 0);
        ++checked;
      }
    CHECK(checked > 0);
  }

  TEST_CASE("issue 50: report counts read right ('1 row', never '1 rows')") {
    ScratchDir dir;
    jarvis::testing::copy_example_trace(dir / "trace.json.gz");
    Output out = run_in(dir.path, "report trace.json.gz --out out");
    REQUIRE_MESSAGE(out.exit_code == 0, out.text);
    CHECK(out.text.find(" 1 rows") == std::string::npos);
    CHECK(out.text.find(" rows\n") != std::string::npos);
  }

  TEST_CASE("issue 50: an Nsight Systems export is named, not dumped as bytes") {
    ScratchDir dir;
    jarvis::testing::write_text(dir / "profile.sqlite",
                                std::string("SQLite format 3\0\x10\x00", 18) + "rest");
    Output out = run_in(dir.path, "report profile.sqlite --out out");
    CHECK(out.exit_code == 1);
    CHECK_MESSAGE(out.text.find("Nsight Systems") != std::string::npos, out.text);
  }
}
