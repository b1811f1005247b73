// SQL over a sweep (sql/sweep_sql.h): the run rows against the sweep's
// directory tree, each run's per-kernel time against its trace's raw kernel
// events, the trace tables over every run against python3 on the raw JSON,
// runs skipped unread by equality on run or a field, the per-rank collective
// skew against the multi-rank collective report, and the lock-down.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "collectives/collectives.h"
#include "explore/trace_store.h"
#include "golden.h"
#include "sql/sql.h"
#include "sql/sweep_sql.h"
#include "sweep/sweep.h"
#include "test_analysis_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

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

sql::QueryResult q(const sweep::Sweep& s, const std::string& text,
                   sql::SweepTraces* traces = nullptr) {
  sql::QueryLimits limits;
  limits.max_rows = 100000;
  return sql::run_sweep_query(s, text, limits, traces);
}

// Runs a python3 script (text) with `args` and parses its JSON output.
nlohmann::json python_json(const std::string& code, const std::string& args) {
  jarvis::testing::TempDir tmp;
  std::string script = tmp.path + "/s.py";
  std::ofstream(script) << code;
  std::string cmd = "python3 '" + script + "' " + args;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  REQUIRE(pclose(p) == 0);
  return nlohmann::json::parse(text);
}

// Per trace file of the sweep (path relative to the root), from the raw
// JSON: GPU events (kernel, gpu_memcpy, gpu_memset) and their summed
// duration (µs), host ProfilerStep ranges, and GPU events whose launch call
// (the cuda_runtime / cuda_driver event of the same correlation) starts
// inside a host step range.
nlohmann::json raw_counts(const std::string& root) {
  return python_json(R"PY(
import glob, gzip, json, os, sys
root = sys.argv[1]
out = {}
for path in sorted(glob.glob(root + '/**/*.json.gz', recursive=True)):
    ev = json.load(gzip.open(path))['traceEvents']
    gpu = [e for e in ev if e.get('ph') == 'X' and e.get('cat') in ('kernel', 'gpu_memcpy', 'gpu_memset')]
    steps = [e for e in ev if e.get('ph') == 'X' and e.get('cat') == 'user_annotation'
             and e.get('name', '').startswith('ProfilerStep#')]
    launch = {}
    for e in ev:
        if e.get('ph') == 'X' and e.get('cat') in ('cuda_runtime', 'cuda_driver'):
            c = e.get('args', {}).get('correlation')
            if c is not None: launch[c] = e['ts']
    in_step = 0
    for k in gpu:
        t = launch.get(k.get('args', {}).get('correlation'))
        if t is None: continue
        in_step += sum(1 for s in steps if s['ts'] <= t < s['ts'] + s['dur'])
    out[os.path.relpath(path, root)] = {'gpu': len(gpu), 'gpu_us': sum(k['dur'] for k in gpu),
                                        'steps': len(steps), 'in_step': in_step}
print(json.dumps(out))
)PY",
                     "'" + root + "'");
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
    for (const char* hostile :
         {"ATTACH '/etc/passwd' AS x", "DELETE FROM kernels", "INSERT INTO runs VALUES (1)",
          "CREATE TABLE t AS SELECT * FROM kernels", "PRAGMA writable_schema = 1",
          "SELECT load_extension('/tmp/x.so')", "SELECT readfile('/etc/passwd')", "DROP VIEW steps",
          "SELECT 1; DELETE FROM events"}) {
      CAPTURE(hostile);
      CHECK_THROWS_AS(q(s, hostile), sql::QueryError);
    }
    CHECK_THROWS_WITH_AS(q(s, "ATTACH '/etc/passwd' AS x"), doctest::Contains("not allowed"),
                         sql::QueryError);
    CHECK_THROWS_WITH_AS(q(s, "SELECT durr FROM kernels"), doctest::Contains("did you mean dur"),
                         sql::QueryError);
    CHECK_THROWS_WITH_AS(q(s, "SELECT * FROM kernel"), doctest::Contains("did you mean kernels"),
                         sql::QueryError);
    // The time limit stops a runaway query over the trace tables.
    sql::QueryLimits tight;
    tight.timeout_ms = 200;
    CHECK_THROWS_AS(sql::run_sweep_query(s,
                                         "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 "
                                         "FROM n) SELECT count(*) FROM n, kernels",
                                         tight),
                    sql::QueryTimeout);
    // The row limit cuts and says so.
    sql::QueryLimits few;
    few.max_rows = 7;
    sql::QueryResult cut = sql::run_sweep_query(s, "SELECT uid FROM events", few);
    CHECK(cut.table.rows.size() == 7);
    CHECK(cut.truncated);
    CHECK(cut.truncation == "row limit 7");
  }

  TEST_CASE("sweep: the trace tables over every run match the raw traces") {
    sweep::Sweep s = load();
    nlohmann::json raw = raw_counts(sweep_root());
    REQUIRE(raw.size() == 6);
    sql::SweepTraces traces;
    sql::QueryResult k =
        q(s,
          "SELECT r.path, k.threads, k.channel, count(*), sum(k.dur) FROM kernels k "
          "JOIN runs r ON r.run = k.run GROUP BY k.run ORDER BY k.run",
          &traces);
    REQUIRE(k.table.rows.size() == 6);
    CHECK(traces.loads() == 6);
    for (const auto& row : k.table.rows) {
      const nlohmann::json& want = raw.at(row[0].text());
      CAPTURE(row[0].text());
      CHECK(as_int(row[3]) == want["gpu"].get<int64_t>());
      CHECK(static_cast<double>(as_int(row[4])) / 1e3 ==
            doctest::Approx(want["gpu_us"].get<double>()).epsilon(1e-6));
      // The fields are the run's directory names.
      CHECK(row[0].text().starts_with(
          fmt::format("{}thread/nccl_{}channels/", as_int(row[1]), as_int(row[2]))));
    }
    // The views join within a run: steps, and the GPU events launched in them.
    sql::QueryResult st = q(s,
                            "SELECT r.path, (SELECT count(*) FROM steps s WHERE s.run = r.run), "
                            "(SELECT count(*) FROM kernels_in_step k WHERE k.run = r.run) "
                            "FROM runs r ORDER BY r.run",
                            &traces);
    REQUIRE(st.table.rows.size() == 6);
    for (const auto& row : st.table.rows) {
      const nlohmann::json& want = raw.at(row[0].text());
      CAPTURE(row[0].text());
      CHECK(as_int(row[1]) == want["steps"].get<int64_t>());
      CHECK(as_int(row[2]) == want["in_step"].get<int64_t>());
    }
    // Kept traces: the second query loaded none.
    CHECK(traces.loads() == 6);
  }

  TEST_CASE("sweep: equality on run or a field skips the other runs unread") {
    sweep::Sweep s = load();
    nlohmann::json raw = raw_counts(sweep_root());
    {
      sql::SweepTraces traces;
      sql::QueryResult r = q(s, "SELECT count(*) FROM kernels WHERE run = 2", &traces);
      CHECK(traces.loads() == 1);
      CHECK(as_int(r.table.rows[0][0]) == raw.at(s.runs[2].input.relative)["gpu"].get<int64_t>());
    }
    int64_t want_256 = 0;
    for (const sweep::Run& run : s.runs)
      if (run.input.values[0] == "256")
        want_256 += raw.at(run.input.relative)["gpu"].get<int64_t>();
    for (const char* where : {"threads = 256", "threads = '256'", "256 = threads",
                              "threads IN (256)", "threads = 256.0"}) {
      CAPTURE(where);
      sql::SweepTraces traces;
      sql::QueryResult r =
          q(s, fmt::format("SELECT count(*) FROM kernels WHERE {}", where), &traces);
      CHECK(as_int(r.table.rows[0][0]) == want_256);
      CHECK(traces.loads() == 3);
    }
    {
      sql::SweepTraces traces;
      sql::QueryResult r = q(s, "SELECT count(*) FROM kernels WHERE threads = 999", &traces);
      CHECK(as_int(r.table.rows[0][0]) == 0);
      CHECK(traces.loads() == 0);
    }
    // A join on run reads each run once (kept), and a uid lookup inside it.
    sql::SweepTraces traces;
    sql::QueryResult j = q(s,
                           "SELECT count(*) FROM kernels k JOIN ops o ON o.run = k.run AND "
                           "o.uid = k.op_uid WHERE k.channel = 28",
                           &traces);
    sql::QueryResult linked =
        q(s, "SELECT count(*) FROM kernels WHERE channel = 28 AND op_uid IS NOT NULL", &traces);
    CHECK(as_int(j.table.rows[0][0]) == as_int(linked.table.rows[0][0]));
    CHECK(as_int(j.table.rows[0][0]) > 0);
    CHECK(traces.loads() == 2);
  }

  TEST_CASE("sweep: report runs (the MI300 TraceLens sweep) have runs but no events") {
    sweep::LoadOptions o;
    o.pattern = "{threads}thread/perf_*_perf_report_csvs";
    o.cache_dir = "none";
    sweep::Sweep s = sweep::load_sweep(
        golden::shared_dir() + "/sweeps/tracelens_mi300_nccl_sweep/compare_test", o);
    REQUIRE(!s.runs.empty());
    sql::SweepTraces traces;
    CHECK(static_cast<size_t>(as_int(
              q(s, "SELECT count(*) FROM runs WHERE kind = 'report'", &traces).table.rows[0][0])) ==
          s.runs.size());
    CHECK(as_int(q(s, "SELECT count(*) FROM kernels", &traces).table.rows[0][0]) == 0);
    CHECK(traces.loads() == 0);
    // Their GPU timelines are the reports' gpu_timeline.csv rows.
    size_t rows = 0;
    for (const sweep::Run& run : s.runs) rows += run.data.timeline.size();
    CHECK(static_cast<size_t>(as_int(q(s, "SELECT count(*) FROM run_timeline").table.rows[0][0])) ==
          rows);
  }

  TEST_CASE("sweep: a run whose trace is gone is named, and can be left out") {
    jarvis::testing::TempDir tmp;
    std::filesystem::copy(sweep_root(), tmp.path + "/sweep",
                          std::filesystem::copy_options::recursive);
    sweep::LoadOptions o;
    o.cache_dir = "none";
    sweep::Sweep s = sweep::load_sweep(tmp.path + "/sweep", o);
    std::filesystem::remove(s.runs[4].input.path);
    std::string named = "run 4 (" + s.runs[4].input.relative + ")";
    CHECK_THROWS_WITH_AS(q(s, "SELECT count(*) FROM kernels"), doctest::Contains(named.c_str()),
                         sql::QueryError);
    CHECK_THROWS_WITH_AS(q(s, "SELECT count(*) FROM kernels"), doctest::Contains("WHERE run <> 4"),
                         sql::QueryError);
    sql::SweepTraces traces;
    CHECK(as_int(q(s, "SELECT count(*) FROM kernels WHERE run <> 4", &traces).table.rows[0][0]) >
          0);
    CHECK(traces.loads() == 5);
    // The cached tables read no trace.
    CHECK(as_int(q(s, "SELECT count(*) FROM runs").table.rows[0][0]) == 6);
  }

  TEST_CASE("sweep: collective_skew matches each instance across the ranks") {
    jarvis::testing::TempDir tmp;
    std::string dir = tmp.path + "/sweep/256thread/nccl_28channels";
    std::string src = golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz";
    std::string cmd = "python3 '" + std::string(JARVIS_SOURCE_DIR) +
                      "/tools/make_multirank_traces.py' --src '" + src + "' --out '" + dir +
                      "' --ranks 2 > /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    sweep::LoadOptions o;
    o.pattern = "{threads}thread/nccl_{channel}channels/rank{rank}.json.gz";
    o.cache_dir = "none";
    sweep::Sweep s = sweep::load_sweep(tmp.path + "/sweep", o);
    REQUIRE(s.runs.size() == 2);
    auto ref = collectives::collective_report({dir + "/rank0.json.gz", dir + "/rank1.json.gz"});
    const auto& instances = ref.report.instances;
    REQUIRE(!instances.empty());
    sql::QueryResult r = q(s,
                           "SELECT process_group, seq, rank, start_skew_us, end_skew_us, wait_us, "
                           "ranks, threads, channel FROM collective_skew ORDER BY process_group, "
                           "seq, rank");
    REQUIRE(r.table.rows.size() == 2 * instances.size());
    for (size_t i = 0; i < instances.size(); ++i) {
      const auto& m = instances[i];
      for (size_t k = 0; k < 2; ++k) {
        const auto& row = r.table.rows[2 * i + k];
        CAPTURE(i);
        CHECK(row[0].text() == m.process_group);
        CHECK(as_int(row[1]) == m.seq);
        CHECK(as_int(row[2]) == m.ranks[k]);
        CHECK(std::get<double>(row[3].v) == doctest::Approx(m.start_skew_us));
        CHECK(std::get<double>(row[4].v) == doctest::Approx(m.end_skew_us));
        CHECK(std::get<double>(row[5].v) == doctest::Approx(m.wait_us[k]));
        CHECK(as_int(row[6]) == 2);
        CHECK(as_int(row[7]) == 256);
        CHECK(as_int(row[8]) == 28);
      }
    }
    // The per-rank collectives of the trace tables join on process_group + seq.
    sql::QueryResult joined = q(s,
                                "SELECT count(*) FROM collectives a JOIN collectives b ON "
                                "a.process_group = b.process_group AND a.seq = b.seq AND "
                                "a.field_rank = 0 AND b.field_rank = 1");
    CHECK(static_cast<size_t>(as_int(joined.table.rows[0][0])) == instances.size());
    // The views over a sweep with ProfilerSteps: steps and the GPU events
    // launched in them, per run, against the raw JSON.
    nlohmann::json raw = raw_counts(tmp.path + "/sweep");
    sql::QueryResult st = q(s,
                            "SELECT r.path, (SELECT count(*) FROM steps s WHERE s.run = r.run), "
                            "(SELECT count(*) FROM kernels_in_step k WHERE k.run = r.run) "
                            "FROM runs r ORDER BY r.run");
    REQUIRE(st.table.rows.size() == 2);
    for (const auto& row : st.table.rows) {
      const nlohmann::json& want = raw.at(row[0].text());
      CAPTURE(row[0].text());
      CHECK(as_int(row[1]) == want["steps"].get<int64_t>());
      CHECK(as_int(row[1]) > 0);
      CHECK(as_int(row[2]) == want["in_step"].get<int64_t>());
      CHECK(as_int(row[2]) > 0);
    }
    // One rank per configuration: no instance to match.
    CHECK(q(load(), "SELECT count(*) FROM collective_skew").table.rows[0][0].v ==
          Cell(int64_t{0}).v);
  }

}  // TEST_SUITE

namespace {

double as_real(const Cell& c) {
  if (c.is_int()) return static_cast<double>(std::get<int64_t>(c.v));
  REQUIRE(c.is_double());
  return std::get<double>(c.v);
}

}  // namespace

TEST_SUITE("sql") {
  TEST_CASE("sweep: report sheets per run match the raw kernels and the report CSVs") {
    sweep::Sweep s = load();
    // Per trace file: GPU time of the kernel events (µs) from the raw JSON.
    nlohmann::json raw = python_json(R"PY(
import glob, gzip, json, os, sys
root = sys.argv[1]
out = {}
for path in sorted(glob.glob(root + '/**/*.json.gz', recursive=True)):
    ev = json.load(gzip.open(path))['traceEvents']
    k = [e for e in ev if e.get('ph') == 'X' and e.get('cat') == 'kernel']
    out[os.path.relpath(path, root)] = {'kernels': len(k), 'kernel_us': sum(e['dur'] for e in k)}
print(json.dumps(out))
)PY",
                                     "'" + sweep_root() + "'");
    {
      // kernel_summary over two runs: its durations add up to the run's kernel time.
      sql::SweepTraces traces;
      sql::QueryResult r = q(s,
                             "SELECT run, threads, channel, sum(\"Kernel duration (µs)_sum\"), "
                             "sum(\"Kernel duration (µs)_count\") FROM kernel_summary "
                             "WHERE run IN (1, 4) GROUP BY run ORDER BY run",
                             &traces);
      REQUIRE(r.table.rows.size() == 2);
      for (const auto& row : r.table.rows) {
        const sweep::Run& run = s.runs.at(static_cast<size_t>(as_int(row[0])));
        const nlohmann::json& want = raw.at(run.input.relative);
        CAPTURE(run.input.relative);
        CHECK(as_real(row[3]) == doctest::Approx(want["kernel_us"].get<double>()).epsilon(1e-9));
        CHECK(as_int(row[4]) == want["kernels"].get<int64_t>());
        CHECK(std::to_string(as_int(row[1])) == run.input.values[0]);
        CHECK(std::to_string(as_int(row[2])) == run.input.values[1]);
      }
      // The columns come from the first trace run's report (read once), then
      // only the runs named are read.
      CHECK(traces.loads() == 3);
    }
    // Every sheet of the single-trace SQL is a table over the runs.
    for (const char* sheet : {"ops_summary", "unified_perf_summary", "GEMM",
                              "ops_summary_by_category", "short_kernels_summary"}) {
      const std::string name = sheet;
      CAPTURE(name);
      sql::QueryResult r =
          q(s, fmt::format("SELECT count(DISTINCT run), count(*) FROM {} WHERE run < 2", sheet));
      CHECK(as_int(r.table.rows[0][0]) == 2);
      CHECK(as_int(r.table.rows[0][1]) > 0);
    }
    CHECK_THROWS_WITH_AS(q(s, "SELECT * FROM no_such_sheet"), doctest::Contains("no such table"),
                         sql::QueryError);

    // Report-directory runs (the MI300 TraceLens sweep): each run's sheet is
    // its <sheet>.csv, row for row.
    sweep::LoadOptions o;
    o.pattern = "{threads}thread/perf_*_perf_report_csvs";
    o.cache_dir = "none";
    std::string mi300 = golden::shared_dir() + "/sweeps/tracelens_mi300_nccl_sweep/compare_test";
    sweep::Sweep rs = sweep::load_sweep(mi300, o);
    REQUIRE(rs.runs.size() == 2);
    for (const sweep::Run& run : rs.runs) {
      nlohmann::json csv = python_json(R"PY(
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1], newline='')))
print(json.dumps({'rows': len(rows), 'names': sorted(r['name'] for r in rows),
                  'time': sum(float(r['Total Kernel Time (ms)']) for r in rows)}))
)PY",
                                       "'" + run.input.path + "/kernel_summary.csv'");
      sql::QueryResult r =
          q(rs, fmt::format("SELECT name, \"Total Kernel Time (ms)\", threads FROM kernel_summary "
                            "WHERE threads = {} ORDER BY name",
                            run.input.values[0]));
      REQUIRE(r.table.rows.size() == csv["rows"].get<size_t>());
      double time = 0;
      for (size_t i = 0; i < r.table.rows.size(); ++i) {
        CHECK(r.table.rows[i][0].text() == csv["names"][i].get<std::string>());
        time += as_real(r.table.rows[i][1]);
        CHECK(std::to_string(as_int(r.table.rows[i][2])) == run.input.values[0]);
      }
      CHECK(time == doctest::Approx(csv["time"].get<double>()).epsilon(1e-9));
    }
  }

  TEST_CASE("sweep: the call-tree functions take the run first") {
    sweep::Sweep s = load();
    // Per trace file, from the raw JSON: each GPU kernel's launch call (the
    // runtime event of its correlation) and, for the first 30 kernels, the
    // cpu_ops on the launch's thread that enclose the launch, innermost first
    // (the ops among the call tree's ancestors above the launch call).
    nlohmann::json raw = python_json(R"PY(
import glob, gzip, json, os, sys
root = sys.argv[1]
out = {}
for path in sorted(glob.glob(root + '/**/*.json.gz', recursive=True)):
    ev = json.load(gzip.open(path))['traceEvents']
    launch = {}
    for i, e in enumerate(ev):
        if e.get('ph') == 'X' and e.get('cat') in ('cuda_runtime', 'cuda_driver'):
            c = e.get('args', {}).get('correlation')
            if c is not None: launch[c] = i
    kernels = [i for i, e in enumerate(ev) if e.get('ph') == 'X' and e.get('cat') == 'kernel']
    parent = {str(i): launch.get(ev[i].get('args', {}).get('correlation')) for i in kernels}
    host = [i for i, e in enumerate(ev) if e.get('ph') == 'X' and e.get('cat') == 'cpu_op']
    chains = {}
    for i in kernels[:30]:
        l = parent[str(i)]
        if l is None: continue
        L = ev[l]
        enc = [j for j in host if ev[j]['pid'] == L['pid'] and ev[j]['tid'] == L['tid']
               and ev[j]['ts'] <= L['ts'] and ev[j]['ts'] + ev[j]['dur'] >= L['ts'] + L['dur']]
        enc.sort(key=lambda j: (ev[j]['dur'], -ev[j]['ts']))
        chains[str(i)] = [l] + enc
    out[os.path.relpath(path, root)] = {'parent': parent, 'chains': chains}
print(json.dumps(out))
)PY",
                                     "'" + sweep_root() + "'");
    for (size_t run : {size_t{2}, size_t{5}}) {
      const nlohmann::json& want = raw.at(s.runs[run].input.relative);
      CAPTURE(run);
      sql::SweepTraces traces;
      sql::QueryResult p = q(s,
                             fmt::format("SELECT uid, parent_uid(run, uid) FROM kernels WHERE run "
                                         "= {} AND category = 'kernel'",
                                         run),
                             &traces);
      REQUIRE(p.table.rows.size() == want["parent"].size());
      for (const auto& row : p.table.rows) {
        const nlohmann::json& w = want["parent"].at(std::to_string(as_int(row[0])));
        if (w.is_null())
          CHECK(row[1].missing());
        else
          CHECK(as_int(row[1]) == w.get<int64_t>());
      }
      REQUIRE(!want["chains"].empty());
      for (const auto& item : want["chains"].items()) {
        const std::string uid = item.key();
        const nlohmann::json& chain = item.value();
        CAPTURE(uid);
        sql::QueryResult a = q(s,
                               fmt::format("SELECT run, threads, channel, uid, distance, "
                                           "is_ancestor(run, uid, {1}) FROM ancestors({0}, {1}) "
                                           "WHERE distance = 1 OR category = 'cpu_op' "
                                           "ORDER BY distance",
                                           run, uid),
                               &traces);
        REQUIRE(a.table.rows.size() == chain.size());
        for (size_t i = 0; i < chain.size(); ++i) {
          const auto& row = a.table.rows[i];
          CHECK(as_int(row[0]) == static_cast<int64_t>(run));
          CHECK(std::to_string(as_int(row[1])) == s.runs[run].input.values[0]);
          CHECK(std::to_string(as_int(row[2])) == s.runs[run].input.values[1]);
          CHECK(as_int(row[3]) == chain[i].get<int64_t>());
          // The launch call is the parent; the ops follow outward.
          if (i == 0)
            CHECK(as_int(row[4]) == 1);
          else
            CHECK(as_int(row[4]) > as_int(a.table.rows[i - 1][4]));
          CHECK(as_int(row[5]) == 1);
        }
      }
      // A join with ancestors per kernel, over one run: kept traces, one load.
      sql::QueryResult j = q(s,
                             fmt::format("SELECT count(*) FROM kernels k JOIN ancestors(k.run, "
                                         "k.uid) a WHERE k.run = {} AND a.distance = 1",
                                         run),
                             &traces);
      size_t linked = 0;
      for (const auto& item : want["parent"].items()) linked += item.value().is_null() ? 0 : 1;
      CHECK(as_int(j.table.rows[0][0]) >= static_cast<int64_t>(linked));
      CHECK(traces.loads() == 1);
    }
    // A run that is no trace run, or an unknown uid: no rows, NULL.
    CHECK(q(s, "SELECT count(*) FROM ancestors(99, 5)").table.rows[0][0].v == Cell(int64_t{0}).v);
    CHECK(q(s, "SELECT parent_uid(0, -1)").table.rows[0][0].missing());
    // Without its arguments ancestors is no table.
    CHECK_THROWS_AS(q(s, "SELECT * FROM ancestors"), sql::QueryError);
  }

  TEST_CASE("sweep: ranges, IN and patterns on run columns skip the runs they rule out") {
    sweep::Sweep s = load();
    sql::QueryResult all = q(s, "SELECT run, count(*), sum(dur) FROM kernels GROUP BY run");
    REQUIRE(all.table.rows.size() == 6);
    auto field = [&](size_t run, size_t f) { return std::stoll(s.runs[run].input.values[f]); };
    struct Case {
      const char* where;
      std::function<bool(size_t)> keep;
    };
    std::vector<Case> cases = {
        {"channel < 42", [&](size_t r) { return field(r, 1) < 42; }},
        {"channel <= 42", [&](size_t r) { return field(r, 1) <= 42; }},
        {"threads > 256", [&](size_t r) { return field(r, 0) > 256; }},
        {"channel >= '42'", [&](size_t r) { return field(r, 1) >= 42; }},
        {"channel BETWEEN 30 AND 50",
         [&](size_t r) { return field(r, 1) >= 30 && field(r, 1) <= 50; }},
        {"run IN (1, 3)", [&](size_t r) { return r == 1 || r == 3; }},
        {"threads LIKE '5%'", [&](size_t r) { return s.runs[r].input.values[0].starts_with("5"); }},
        {"channel GLOB '2?'", [&](size_t r) { return s.runs[r].input.values[1].starts_with("2"); }},
        {"threads = 256 AND channel > 28",
         [&](size_t r) { return field(r, 0) == 256 && field(r, 1) > 28; }},
    };
    for (const Case& c : cases) {
      const std::string where = c.where;
      CAPTURE(where);
      sql::SweepTraces traces;
      sql::QueryResult r = q(s,
                             fmt::format("SELECT run, count(*), sum(dur) FROM kernels WHERE {} "
                                         "GROUP BY run",
                                         c.where),
                             &traces);
      std::vector<std::vector<Cell>> want;
      for (const auto& row : all.table.rows)
        if (c.keep(static_cast<size_t>(as_int(row[0])))) want.push_back(row);
      REQUIRE(!want.empty());
      REQUIRE(r.table.rows.size() == want.size());
      for (size_t i = 0; i < want.size(); ++i)
        for (size_t k = 0; k < 3; ++k) CHECK(r.table.rows[i][k].v == want[i][k].v);
      CHECK(traces.loads() == want.size());
    }
    // Text fields: order and patterns on text.
    jarvis::testing::TempDir tmp;
    for (const char* mode : {"eager", "compiled", "fused"}) {
      std::filesystem::create_directories(tmp.path + "/" + mode);
      std::filesystem::copy_file(s.runs[0].input.path, tmp.path + "/" + mode + "/trace.json.gz");
    }
    sweep::LoadOptions o;
    o.pattern = "{mode}/trace.json.gz";
    o.cache_dir = "none";
    sweep::Sweep t = sweep::load_sweep(tmp.path, o);
    REQUIRE(t.runs.size() == 3);
    int64_t per_run = as_int(q(t, "SELECT count(*) FROM kernels WHERE run = 0").table.rows[0][0]);
    for (const auto& text_case :
         std::vector<std::pair<const char*, int64_t>>{{"mode LIKE 'EAG%'", 1},
                                                      {"mode > 'd'", 2},
                                                      {"mode GLOB 'f*d'", 1},
                                                      {"mode < 'eager'", 1},
                                                      {"mode LIKE '%e%'", 3},
                                                      {"mode >= 'fused' COLLATE NOCASE", 1}}) {
      const std::string w = text_case.first;
      const int64_t runs = text_case.second;
      CAPTURE(w);
      sql::SweepTraces traces;
      sql::QueryResult r = q(t, "SELECT count(*) FROM kernels WHERE " + w, &traces);
      CHECK(as_int(r.table.rows[0][0]) == runs * per_run);
      // COLLATE NOCASE is SQLite's to check: every run is read.
      CHECK(traces.loads() == (w.find("NOCASE") != std::string::npos ? 3 : runs));
    }
  }

  TEST_CASE("rank traces as one sweep: collective_skew against the generator's delays") {
    jarvis::testing::TempDir tmp;
    std::string dir = tmp.path + "/ranks";
    std::string shared = golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0";
    std::string cmd = "python3 '" + std::string(JARVIS_SOURCE_DIR) +
                      "/tools/make_multirank_traces.py' --src '" + shared +
                      "/trace.json.gz' --out '" + dir + "' --ranks 2 > /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    nlohmann::json truth = nlohmann::json::parse(std::ifstream(dir + "/truth.json"));
    sweep::LoadOptions o;
    o.cache_dir = "none";
    // Given in reverse: the rank is the traces' distributedInfo.rank.
    sweep::Sweep s = sweep::load_sweep_files({dir + "/rank1.json.gz", dir + "/rank0.json.gz"}, o);
    REQUIRE(s.runs.size() == 2);
    sql::QueryResult r = q(s,
                           "SELECT process_group, seq, rank, start_skew_us, end_skew_us, wait_us, "
                           "ranks, run FROM collective_skew ORDER BY process_group, seq, rank");
    const auto& inst = truth["instances"];
    REQUIRE(r.table.rows.size() == 2 * inst.size());
    for (size_t i = 0; i < inst.size(); ++i) {
      const auto& t = inst[i];
      std::vector<double> d = t["delays_us"].get<std::vector<double>>();
      double hi = *std::max_element(d.begin(), d.end()), lo = *std::min_element(d.begin(), d.end());
      for (size_t k = 0; k < 2; ++k) {
        const auto& row = r.table.rows[2 * i + k];
        CAPTURE(i);
        CHECK(row[0].text() == t["process_group"].get<std::string>());
        CHECK(as_int(row[1]) == t["seq"].get<int64_t>());
        CHECK(as_int(row[2]) == static_cast<int64_t>(k));
        CHECK(as_real(row[3]) == doctest::Approx(hi - lo).epsilon(1e-9));
        CHECK(as_real(row[4]) == doctest::Approx(0.0).epsilon(1e-9));
        CHECK(as_real(row[5]) == doctest::Approx(hi - d[k]).epsilon(1e-9));
        CHECK(as_int(row[6]) == 2);
        CHECK(as_int(row[7]) == (k == 0 ? 1 : 0));  // run = position in the list given
      }
    }
    // Each rank's collectives against the rank-0 trace's coll_analysis.csv
    // (TraceLens): instances per message size.
    nlohmann::json coll = python_json(R"PY(
import csv, json, sys
out = {}
for r in csv.DictReader(open(sys.argv[1], newline='')):
    out[r['In msg nelems']] = out.get(r['In msg nelems'], 0) + int(r['operation_count'])
print(json.dumps(out))
)PY",
                                      "'" + shared + "/perf_report_csvs/coll_analysis.csv'");
    sql::QueryResult c = q(s,
                           "SELECT rank, in_msg_nelems, count(*) FROM collectives GROUP BY rank, "
                           "in_msg_nelems ORDER BY rank, in_msg_nelems");
    REQUIRE(c.table.rows.size() == 2 * coll.size());
    for (const auto& row : c.table.rows)
      CHECK(as_int(row[2]) == coll.at(std::to_string(as_int(row[1]))).get<int64_t>());
  }
}  // TEST_SUITE

}  // namespace JARVIS_TEST_FILE
}  // namespace
