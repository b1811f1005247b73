// The SQLite export (sql::export_sqlite) and the collectives table. The export
// is read back with SQLite's own C API and compared with the same queries run
// over the loaded trace and with counts taken from the raw events; the
// collectives rows are checked against the raw NCCL kernel events and their
// args, and against TraceLens's coll_analysis.csv.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "explore/trace_store.h"
#include "golden.h"
#include "sql/export.h"
#include "sql/sql.h"
#include "test_analysis_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::sql;

namespace {

const std::string kNccl = "nccl/hta_allreduce_2ranks_rank0";

std::string trace_path(const std::string& name) {
  return golden::shared_dir() + "/" + name + "/trace.json.gz";
}

struct Loaded {
  TraceCache cache;
  TraceStore store{cache};
  std::shared_ptr<const LoadedTrace> entry;
  explicit Loaded(const std::string& name) : entry(store.load(trace_path(name)).entry) {}
  const Trace& trace() const { return entry->trace(); }
  QueryResult q(const std::string& sql) {
    QueryLimits limits;
    limits.max_rows = 1000000;
    limits.max_bytes = size_t{1} << 30;
    return run_query(*entry, sql, limits);
  }
};

// A database file read through the sqlite3 C API, as any client reads it.
struct File {
  sqlite3* db = nullptr;
  explicit File(const std::string& path) {
    REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  }
  ~File() { sqlite3_close_v2(db); }
  // Every row of a query, cells as Cell (int, double, text or missing).
  std::vector<std::vector<Cell>> rows(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr);
    INFO(sql, ": ", sqlite3_errmsg(db));
    REQUIRE(rc == SQLITE_OK);
    std::vector<std::vector<Cell>> out;
    while (sqlite3_step(st) == SQLITE_ROW) {
      std::vector<Cell> row;
      for (int i = 0; i < sqlite3_column_count(st); ++i) {
        switch (sqlite3_column_type(st, i)) {
          case SQLITE_INTEGER:
            row.emplace_back(static_cast<int64_t>(sqlite3_column_int64(st, i)));
            break;
          case SQLITE_FLOAT:
            row.emplace_back(sqlite3_column_double(st, i));
            break;
          case SQLITE_TEXT:
            row.emplace_back(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, i)),
                                         static_cast<size_t>(sqlite3_column_bytes(st, i))));
            break;
          default:
            row.emplace_back();
        }
      }
      out.push_back(std::move(row));
    }
    sqlite3_finalize(st);
    return out;
  }
  int64_t scalar(const std::string& sql) {
    auto r = rows(sql);
    REQUIRE(r.size() == 1);
    REQUIRE(r[0][0].is_int());
    return std::get<int64_t>(r[0][0].v);
  }
};

std::string cell_text(const Cell& c) {
  if (c.is_int()) return std::to_string(std::get<int64_t>(c.v));
  if (c.is_double()) return fmt::format("{}", std::get<double>(c.v));
  if (c.is_text()) return "'" + c.text();
  return "NULL";
}

int64_t raw_int(const Trace& tr, Uid u, const char* key) {
  const PyValue* v = tr.arg(u, key);
  REQUIRE(v != nullptr);
  return static_cast<int64_t>(v->as_double());
}

std::string raw_text(const Trace& tr, Uid u, const char* key) {
  const PyValue* v = tr.arg(u, key);
  REQUIRE(v != nullptr);
  REQUIRE(v->is_string());
  return v->s;
}

}  // namespace

TEST_SUITE("sql") {
  TEST_CASE("collectives: one row per NCCL kernel with the raw events' args") {
    Loaded t(kNccl);
    const Trace& tr = t.trace();
    // The NCCL kernels of the raw events, by uid.
    std::vector<Uid> nccl;
    for (Uid u = 0; u < tr.events.size(); ++u)
      if (tr.events[u].cat == Cat::Kernel && tr.name(u).starts_with("ncclKernel"))
        nccl.push_back(u);
    REQUIRE(nccl.size() == 21);
    QueryResult r = t.q(
        "SELECT uid, rank, world_size, process_group, group_ranks, group_size, collective, dtype, "
        "in_msg_nelems, bytes, ts, dur, end, stream, seq, busbw_gbps / algbw_gbps FROM "
        "collectives ORDER BY uid");
    REQUIRE(r.table.rows.size() == nccl.size());
    for (size_t i = 0; i < nccl.size(); ++i) {
      const auto& row = r.table.rows[i];
      Uid u = nccl[i];
      const Event& e = tr.events[u];
      CAPTURE(u);
      CHECK(std::get<int64_t>(row[0].v) == u);
      CHECK(std::get<int64_t>(row[1].v) == 0);  // distributedInfo.rank
      CHECK(std::get<int64_t>(row[2].v) == 2);  // distributedInfo.world_size
      CHECK(row[3].text() == raw_text(tr, u, "Process Group Name"));
      CHECK(row[4].text() == raw_text(tr, u, "Process Group Ranks"));
      CHECK(std::get<int64_t>(row[5].v) == raw_int(tr, u, "Group size"));
      CHECK(row[6].text() == raw_text(tr, u, "Collective name"));
      CHECK(row[7].text() == raw_text(tr, u, "dtype"));
      int64_t nelems = raw_int(tr, u, "In msg nelems");
      CHECK(std::get<int64_t>(row[8].v) == nelems);
      // PyTorch's dtype names of this trace: Float (allreduce) and Long (broadcast).
      std::string dtype = raw_text(tr, u, "dtype");
      REQUIRE((dtype == "Float" || dtype == "Long"));
      CHECK(std::get<int64_t>(row[9].v) == nelems * (dtype == "Float" ? 4 : 8));
      CHECK(std::get<int64_t>(row[10].v) == e.ts_ns);
      CHECK(std::get<int64_t>(row[11].v) == e.dur_ns);
      CHECK(std::get<int64_t>(row[12].v) == e.ts_ns + e.dur_ns);
      CHECK(std::get<int64_t>(row[13].v) == tr.stream(u));  // args.stream, as the loader keeps it
      // Bus factor of a 2-rank group: allreduce 2(n-1)/n = 1, broadcast 1.
      CHECK(std::get<double>(row[15].v) == doctest::Approx(1.0));
    }
    // seq: 0-based start-time order in the process group (one group here).
    std::vector<std::pair<int64_t, Uid>> by_start;
    for (Uid u : nccl) by_start.emplace_back(tr.events[u].ts_ns, u);
    std::sort(by_start.begin(), by_start.end());
    for (size_t i = 0; i < by_start.size(); ++i) {
      CAPTURE(i);
      QueryResult s =
          t.q(fmt::format("SELECT seq FROM collectives WHERE uid = {}", by_start[i].second));
      REQUIRE(s.table.rows.size() == 1);
      CHECK(std::get<int64_t>(s.table.rows[0][0].v) == static_cast<int64_t>(i));
    }
  }

  TEST_CASE("collectives: per-size totals match TraceLens's coll_analysis.csv") {
    // coll_analysis.csv groups by (collective, In msg nelems): dur_sum in µs.
    std::ifstream in(golden::shared_dir() + "/" + kNccl + "/perf_report_csvs/coll_analysis.csv");
    REQUIRE(in.good());
    std::string line;
    std::getline(in, line);
    std::map<std::pair<std::string, int64_t>, std::pair<double, int64_t>> expected;
    while (std::getline(in, line)) {
      // rank,PG name,"[0, 1]",collective(3),group size,dtype,In
      // nelems(6),...,dur_sum(13),...,count(18)
      std::vector<std::string> f;
      std::string cur;
      bool quoted = false;
      for (char c : line) {
        if (c == '"')
          quoted = !quoted;
        else if (c == ',' && !quoted) {
          f.push_back(cur);
          cur.clear();
        } else
          cur += c;
      }
      f.push_back(cur);
      REQUIRE(f.size() == 19);
      expected[{f[3], std::stoll(f[6])}] = {std::stod(f[13]), std::stoll(f[18])};
    }
    REQUIRE(!expected.empty());
    Loaded t(kNccl);
    QueryResult r =
        t.q("SELECT collective, in_msg_nelems, sum(dur), count(*) FROM collectives GROUP BY 1, 2");
    REQUIRE(r.table.rows.size() == expected.size());
    for (const auto& row : r.table.rows) {
      auto key = std::make_pair(row[0].text(), std::get<int64_t>(row[1].v));
      CAPTURE(key.first);
      CAPTURE(key.second);
      REQUIRE(expected.count(key) == 1);
      CHECK(std::get<int64_t>(row[2].v) / 1e3 ==
            doctest::Approx(expected[key].first).epsilon(1e-6));
      CHECK(std::get<int64_t>(row[3].v) == expected[key].second);
    }
  }

  TEST_CASE("collectives: empty for a trace without collective kernels") {
    Loaded t("conformance/h100_bert-small");
    QueryResult r = t.q("SELECT count(*) FROM collectives");
    CHECK(std::get<int64_t>(r.table.rows[0][0].v) == 0);
  }

  TEST_CASE("export: the file holds every table and view with the rows queries see") {
    jarvis::testing::TempDir dir;
    std::string path = dir.path + "/trace.sqlite";
    Loaded t(kNccl);
    const Trace& tr = t.trace();
    ExportResult ex = export_sqlite(*t.entry, path);
    REQUIRE(std::filesystem::is_regular_file(path));
    File f(path);
    std::set<std::string> in_file;
    for (const auto& row :
         f.rows("SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view')"))
      in_file.insert(row[0].text() + ":" + row[1].text());
    for (const char* table : {"events", "ops", "kernels", "annotations", "gpu_timeline", "memory",
                              "collectives", "ops_summary", "kernel_summary", "coll_analysis"})
      CHECK_MESSAGE(in_file.count(std::string(table) + ":table") == 1, table);
    for (const char* view : {"steps", "ops_in_step", "kernels_in_step"})
      CHECK_MESSAGE(in_file.count(std::string(view) + ":view") == 1, view);
    // Row counts: the raw events, and every exported table against the query.
    CHECK(f.scalar("SELECT count(*) FROM events") == static_cast<int64_t>(tr.events.size()));
    int64_t gpu = 0, steps = 0;
    for (Uid u = 0; u < tr.events.size(); ++u) {
      gpu += tr.events[u].is_gpu();
      steps += tr.events[u].cat == Cat::UserAnnotation && tr.name(u).starts_with("ProfilerStep#");
    }
    CHECK(f.scalar("SELECT count(*) FROM kernels") == gpu);
    CHECK(f.scalar("SELECT count(*) FROM steps") == steps);
    for (const ExportedTable& e : ex.tables) {
      CAPTURE(e.name);
      CHECK(e.skipped.empty());
      std::string count = fmt::format("SELECT count(*) FROM \"{}\"", e.name);
      int64_t in_query = std::get<int64_t>(t.q(count).table.rows.at(0).at(0).v);
      CHECK(f.scalar(count) == in_query);
      if (!e.view) CHECK(static_cast<int64_t>(e.rows) == in_query);
    }
    // Sample values, cell by cell (the file stores what the query reads).
    for (const char* sql :
         {"SELECT * FROM events WHERE uid % 97 = 0 ORDER BY uid",
          "SELECT * FROM ops ORDER BY uid LIMIT 200", "SELECT * FROM kernels ORDER BY uid",
          "SELECT * FROM collectives ORDER BY uid", "SELECT * FROM ops_summary",
          "SELECT * FROM kernels_in_step ORDER BY uid"}) {
      CAPTURE(sql);
      auto want = t.q(sql).table.rows;
      auto got = f.rows(sql);
      REQUIRE(got.size() == want.size());
      REQUIRE(!got.empty());
      for (size_t i = 0; i < got.size(); ++i)
        for (size_t c = 0; c < got[i].size(); ++c) {
          INFO("row ", i, " column ", c);
          CHECK(cell_text(got[i][c]) == cell_text(want[i][c]));
        }
    }
    // Declared types, and the uid index that keeps lookups cheap.
    auto cols = f.rows("SELECT name, type FROM pragma_table_info('collectives')");
    REQUIRE(cols.size() >= 3);
    CHECK(cols[0][0].text() == "uid");
    CHECK(cols[0][1].text() == "INTEGER");
    CHECK(f.scalar("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND "
                   "tbl_name = 'events'") == 1);
  }

  TEST_CASE("export: a table whose data cannot be built is left empty and says why") {
    jarvis::testing::TempDir dir;
    std::string trace = dir.path + "/cpu_only.json";
    std::ofstream(trace) << R"J({"traceEvents":[
      {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":10,"dur":5},
      {"ph":"X","cat":"cpu_op","name":"aten::mul","pid":1,"tid":1,"ts":20,"dur":3}]})J";
    TraceCache cache;
    TraceStore store{cache};
    auto entry = store.load(trace).entry;
    std::string path = dir.path + "/cpu_only.sqlite";
    ExportResult ex = export_sqlite(*entry, path);
    File f(path);
    CHECK(f.scalar("SELECT count(*) FROM ops") == 2);
    CHECK(f.scalar("SELECT count(*) FROM gpu_timeline") == 0);
    bool said = false;
    for (const ExportedTable& e : ex.tables)
      if (e.name == "gpu_timeline") said = e.skipped.find("no GPU event") != std::string::npos;
    CHECK(said);
  }

}  // TEST_SUITE

}  // namespace JARVIS_TEST_FILE
}  // namespace
