// SQL over a sweep (sql/sweep_sql.h): the run rows against the sweep's
// directory tree, and each run's per-kernel time against its trace's raw
// kernel events, summed here.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <string>

#include "explore/trace_store.h"
#include "golden.h"
#include "sql/sweep_sql.h"
#include "sweep/sweep.h"

using namespace jarvis;

namespace {

std::string sweep_root() {
  return golden::shared_dir() + "/sweeps/h100_gpt2_ddp";
}

sweep::Sweep load() {
  sweep::LoadOptions o;
  o.cache_dir = "none";  // never writes a cache (nor into ../shared)
  return sweep::load_sweep(sweep_root(), o);
}

sql::QueryResult q(const sweep::Sweep& s, const std::string& text) {
  sql::QueryLimits limits;
  limits.max_rows = 100000;
  return sql::run_sweep_query(s, text, limits);
}

int64_t as_int(const Cell& c) {
  REQUIRE(c.is_int());
  return std::get<int64_t>(c.v);
}

}  // namespace

TEST_SUITE("sql") {
  TEST_CASE("sweep: runs has one row per trace with the layout's fields as columns") {
    size_t traces = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(sweep_root()))
      traces += e.path().filename() == "trace.json.gz";
    REQUIRE(traces == 6);
    sweep::Sweep s = load();
    sql::QueryResult r = q(s, "SELECT threads, channel, path, rank FROM runs ORDER BY run");
    REQUIRE(r.table.rows.size() == traces);
    for (const auto& row : r.table.rows) {
      // The fields are the numbers of the directory names
      // <threads>thread/nccl_<channel>channels/torch_profiler/rank<rank>/trace.json.gz.
      std::string want = fmt::format("{}thread/nccl_{}channels/torch_profiler/rank{}/trace.json.gz",
                                     as_int(row[0]), as_int(row[1]), as_int(row[3]));
      CHECK(row[2].text() == want);
    }
    // One query compares configurations.
    sql::QueryResult by = q(s, "SELECT threads, count(*) FROM runs GROUP BY threads ORDER BY 1");
    REQUIRE(by.table.rows.size() == 2);
    CHECK(as_int(by.table.rows[0][0]) == 256);
    CHECK(as_int(by.table.rows[0][1]) == 3);
  }

  TEST_CASE("sweep: run_kernels holds each run's kernel time from its raw events") {
    sweep::Sweep s = load();
    sql::QueryResult paths = q(s, "SELECT run, path FROM runs ORDER BY run");
    REQUIRE(paths.table.rows.size() == 6);
    for (size_t i : {size_t{0}, size_t{5}}) {
      int64_t run = as_int(paths.table.rows[i][0]);
      std::string path = sweep_root() + "/" + paths.table.rows[i][1].text();
      TraceCache cache;
      TraceStore store{cache};
      auto entry = store.load(path).entry;
      const Trace& tr = entry->trace();
      std::map<std::string, double> want;  // kernel name -> µs
      for (Uid u = 0; u < tr.events.size(); ++u)
        if (tr.events[u].cat == Cat::Kernel)
          want[std::string(tr.name(u))] += static_cast<double>(tr.events[u].dur_ns) / 1e3;
      sql::QueryResult got =
          q(s, fmt::format("SELECT kernel, time_us FROM run_kernels WHERE run = {}", run));
      REQUIRE(got.table.rows.size() == want.size());
      for (const auto& row : got.table.rows) {
        CAPTURE(row[0].text());
        REQUIRE(want.count(row[0].text()) == 1);
        CHECK(std::get<double>(row[1].v) == doctest::Approx(want[row[0].text()]).epsilon(1e-9));
      }
    }
  }

  TEST_CASE("sweep: the same lock-down as a trace query") {
    sweep::Sweep s = load();
    CHECK_THROWS_WITH_AS(q(s, "ATTACH '/etc/passwd' AS x"), doctest::Contains("not allowed"),
                         sql::QueryError);
    CHECK_THROWS_AS(q(s, "SELECT * FROM events"), sql::QueryError);  // no trace tables here
  }

}  // TEST_SUITE
