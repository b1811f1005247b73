// `jarvis sql` as a command: CSV to a file, a refused query's exit code, and
// the input never written over.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "golden.h"
#include "test_analysis_support.h"

namespace {

struct Run {
  int exit_code = -1;
  std::string out;  // stdout and stderr
};

Run jarvis_cli(const std::string& args) {
  Run r;
  std::string cmd = std::string(JARVIS_BINARY) + " --no-cache " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace

TEST_SUITE("sql") {
  TEST_CASE("jarvis sql: csv to --out, refusals exit 1, inputs are never written") {
    jarvis::testing::TempDir dir;
    std::string trace =
        jarvis::golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz";
    std::string out = dir.path + "/steps.csv";
    Run r = jarvis_cli("sql " + trace +
                       " \"SELECT step, name FROM steps ORDER BY step\" --format csv --out " + out);
    CHECK(r.exit_code == 0);
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    CHECK(text.str() == "step,name\n4,ProfilerStep#4\n5,ProfilerStep#5\n6,ProfilerStep#6\n");
    r = jarvis_cli("sql " + trace + " \"ATTACH '/etc/passwd' AS x\"");
    CHECK(r.exit_code == 1);
    CHECK(r.out.find("not allowed: ATTACH") != std::string::npos);
    std::string copy = dir.path + "/t.json.gz";
    std::filesystem::copy_file(trace, copy);
    auto size = std::filesystem::file_size(copy);
    r = jarvis_cli("sql " + copy + " \"SELECT 1\" --out " + copy);
    CHECK(r.exit_code == 2);
    CHECK(std::filesystem::file_size(copy) == size);
  }

}  // TEST_SUITE
