// `jarvis sql` as a command: CSV to a file, a refused query's exit code, and
// the input never written over.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sqlite3.h>
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
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

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
  TEST_CASE("jarvis sql --export: a file sqlite3 reads; a file jarvis did not write is refused") {
    jarvis::testing::TempDir dir;
    jarvis::loader_test::EnvGuard env;
    env.set("JARVIS_CACHE_DIR", (dir.path + "/cache").c_str());  // the write ledger
    std::string trace =
        jarvis::golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz";
    std::string db = dir.path + "/t.sqlite";
    auto r = jarvis_cli("sql " + trace + " --export " + db);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("views") != std::string::npos);
    // Read back through SQLite's C API, as any client opens it; the step
    // count is the ProfilerStep ranges the first test lists.
    sqlite3* conn = nullptr;
    REQUIRE(sqlite3_open_v2(db.c_str(), &conn, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
    std::string counts;
    sqlite3_exec(
        conn, "SELECT (SELECT count(*) FROM steps), (SELECT count(*) FROM collectives)",
        [](void* out, int n, char** v, char**) {
          for (int i = 0; i < n; ++i) *static_cast<std::string*>(out) += std::string(v[i]) + " ";
          return 0;
        },
        &counts, nullptr);
    sqlite3_close_v2(conn);
    CHECK(counts == "3 21 ");
    // Again over its own file: fine without --force.
    r = jarvis_cli("sql " + trace + " --export " + db);
    CHECK(r.exit_code == 0);
    // Over a file jarvis did not write: refused (exit 2, file untouched) unless --force.
    std::string mine = dir.path + "/notes.db";
    std::ofstream(mine) << "my notes";
    r = jarvis_cli("sql " + trace + " --export " + mine);
    CHECK(r.exit_code == 2);
    CHECK(std::filesystem::file_size(mine) == 8);
    r = jarvis_cli("sql " + trace + " --export " + mine + " --force");
    CHECK(r.exit_code == 0);
    CHECK(std::filesystem::file_size(mine) > 8);
    // Never over the input, even forced; a query with --export is a usage error.
    r = jarvis_cli("sql " + trace + " --export " + trace + " --force");
    CHECK(r.exit_code == 2);
    r = jarvis_cli("sql " + trace + " \"SELECT 1\" --export " + dir.path + "/x.sqlite");
    CHECK(r.exit_code == 2);
    CHECK(!std::filesystem::exists(dir.path + "/x.sqlite"));
  }

  TEST_CASE("jarvis sql SWEEP_DIR: the sweep's runs table") {
    jarvis::testing::TempDir dir;
    jarvis::loader_test::EnvGuard env;
    env.set("JARVIS_CACHE_DIR", (dir.path + "/cache").c_str());  // the sweep's run cache
    std::string sweep = jarvis::golden::shared_dir() + "/sweeps/h100_gpt2_ddp";
    auto r = jarvis_cli("sql " + sweep +
                        " \"SELECT threads, count(*) AS n FROM runs GROUP BY 1 ORDER BY 1\" "
                        "--format csv");
    CHECK(r.exit_code == 0);
    CHECK(r.output == "threads,n\n256,3\n512,3\n");
    r = jarvis_cli("sql " + sweep + " --export " + dir.path + "/s.sqlite");
    CHECK(r.exit_code == 2);
  }

  TEST_CASE("jarvis sql RANK_TRACE... / a directory of rank traces: collective_skew across them") {
    jarvis::testing::TempDir dir;
    std::string ranks = dir.path + "/ranks";
    std::string cmd = "python3 '" + std::string(JARVIS_SOURCE_DIR) +
                      "/tools/make_multirank_traces.py' --src '" + jarvis::golden::shared_dir() +
                      "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz' --out '" + ranks +
                      "' --ranks 2 > /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    // The generator's instances: each is one row per rank.
    std::ifstream in(ranks + "/truth.json");
    std::stringstream text;
    text << in.rdbuf();
    size_t instances = 0;
    for (size_t at = 0; (at = text.str().find("\"delays_us\"", at)) != std::string::npos; ++at)
      ++instances;
    REQUIRE(instances > 0);
    std::filesystem::rename(ranks + "/truth.json", dir.path + "/truth.json");  // not a trace
    std::string want = fmt::format("rank,n\n0,{0}\n1,{0}\n", instances);
    const std::string query =
        " \"SELECT rank, count(*) AS n FROM collective_skew GROUP BY rank ORDER BY rank\" "
        "--format csv";
    auto r = jarvis_cli("sql " + ranks + "/rank0.json.gz " + ranks + "/rank1.json.gz" + query);
    CHECK(r.exit_code == 0);
    CHECK(r.output == want);
    r = jarvis_cli("sql " + ranks + query);
    CHECK(r.exit_code == 0);
    CHECK(r.output == want);
  }

}  // TEST_SUITE

}  // namespace JARVIS_TEST_FILE
}  // namespace
