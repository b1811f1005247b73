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
#include "test_loader_support.h"

namespace {

// The shared runner (test_loader_support.h), without the trace cache.
jarvis::loader_test::CliResult jarvis_cli(const std::string& args) {
  return jarvis::loader_test::run_jarvis("--no-cache " + args);
}

}  // namespace

TEST_SUITE("sql") {
  TEST_CASE("jarvis sql: csv to --out, refusals exit 1, inputs are never written") {
    jarvis::testing::TempDir dir;
    std::string trace =
        jarvis::golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz";
    std::string out = dir.path + "/steps.csv";
    auto r =
        jarvis_cli("sql " + trace +
                   " \"SELECT step, name FROM steps ORDER BY step\" --format csv --out " + out);
    CHECK(r.exit_code == 0);
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    CHECK(text.str() == "step,name\n4,ProfilerStep#4\n5,ProfilerStep#5\n6,ProfilerStep#6\n");
    r = jarvis_cli("sql " + trace + " \"ATTACH '/etc/passwd' AS x\"");
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("not allowed: ATTACH") != std::string::npos);
    std::string copy = dir.path + "/t.json.gz";
    std::filesystem::copy_file(trace, copy);
    auto size = std::filesystem::file_size(copy);
    r = jarvis_cli("sql " + copy + " \"SELECT 1\" --out " + copy);
    CHECK(r.exit_code == 2);
    CHECK(std::filesystem::file_size(copy) == size);
  }

}  // TEST_SUITE
