// Nsight Systems SQLite exports: the three real exports in ../shared/nsys
// (2 H100s, PyTorch emit_nvtx ranges) against numbers computed here with SQL
// on the export itself (kernels per device, top kernels, NVTX range totals),
// the facts published with the before/after pair, a small export built here
// by hand (emit_nvtx sizes, correlation links), and bad inputs: a truncated
// file, a non-nsys database, an older schema, a locked file, a .nsys-rep.
// Every load leaves the file's bytes and mtime as they were.
#include <doctest/doctest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>

#include <fmt/format.h>

#include "collectives/collectives.h"
#include "compare/step_views.h"
#include "critical_path/critical_path.h"
#include "explore/input_format.h"
#include "mcp_harness.h"
#include "memory/memory.h"
#include "nsys/emit_nvtx.h"
#include "nsys/export.h"
#include "nsys_tables.h"
#include "report/report.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
namespace fs = std::filesystem;
namespace nsys_tables = jarvis::testing::nsys_tables;

namespace {

const std::string kDir = std::string(JARVIS_SHARED_DIR) + "/nsys";
const std::string k1s = kDir + "/h100_2gpu_1s.sqlite";
const std::string kBefore = kDir + "/mfu_2gpu_before.sqlite";
const std::string kAfter = kDir + "/mfu_2gpu_after.sqlite";

bool have_samples() {
  return fs::exists(k1s) && fs::exists(kBefore) && fs::exists(kAfter);
}

// The test's own read-only SQL on an export (independent of the reader).
class Sql {
 public:
  explicit Sql(const std::string& path, bool writable = false) {
    int flags = writable ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
    REQUIRE(sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) == SQLITE_OK);
  }
  ~Sql() { sqlite3_close_v2(db_); }
  Sql(const Sql&) = delete;
  Sql& operator=(const Sql&) = delete;

  // Rows of text cells.
  std::vector<std::vector<std::string>> rows(const std::string& sql) {
    std::vector<std::vector<std::string>> out;
    sqlite3_stmt* s = nullptr;
    REQUIRE_MESSAGE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) == SQLITE_OK,
                    sqlite3_errmsg(db_));
    while (sqlite3_step(s) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        const unsigned char* t = sqlite3_column_text(s, c);
        row.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
      }
      out.push_back(std::move(row));
    }
    sqlite3_finalize(s);
    return out;
  }
  void exec(const std::string& sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    std::string message = err ? err : "";
    sqlite3_free(err);
    REQUIRE_MESSAGE(rc == SQLITE_OK, message);
  }

 private:
  sqlite3* db_ = nullptr;
};

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / fmt::format("jarvis_nsys.{}", ::getpid());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Sum of a report column over rows, by the flattened name pandas writes
// ("Kernel duration (µs)_sum") or the plain one.
int column_of(const Table& t, std::string_view name) {
  for (size_t c = 0; c < t.columns.size(); ++c) {
    std::string flat = t.columns[c];
    if (c < t.column_level2.size() && !t.column_level2[c].empty()) flat += "_" + t.column_level2[c];
    if (flat == name || t.columns[c] == name) return static_cast<int>(c);
  }
  FAIL("no column " << name << " in " << t.name);
  return -1;
}

struct Loaded {
  Trace trace;
  Report report;
};

Loaded load_and_report(const std::string& path) {
  REQUIRE(detect_input_format(path) == InputFormat::NsysSqlite);
  Loaded l{load_any_trace(path), {}};
  CallTree tree(l.trace);
  l.report = build_report(l.trace, tree, ReportOptions{});
  return l;
}

// Kernel time (ms) per kernel name in the report's kernel_summary.
std::map<std::string, double> kernel_summary_ms(const Report& r) {
  const Table* ks = r.find("kernel_summary");
  REQUIRE(ks != nullptr);
  int name = column_of(*ks, "Kernel name");
  int sum = column_of(*ks, "Kernel duration (µs)_sum");
  std::map<std::string, double> out;
  for (const auto& row : ks->rows) out[row[name].text()] += row[sum].number() / 1e3;
  return out;
}

}  // namespace

TEST_SUITE("nsys") {
  TEST_CASE("nsys: kernels per device, top kernels and NVTX totals equal SQL on the export") {
    if (!have_samples()) return;
    for (const std::string& path : {k1s, kBefore, kAfter}) {
      CAPTURE(path);
      Sql sql(path);
      Loaded l = load_and_report(path);
      const Trace& t = l.trace;
      CHECK(t.platform == Platform::Cuda);
      CHECK(nsys::is_nsys_trace(t));

      // Kernels per device: count and time (ns) from the event model.
      std::map<int64_t, std::pair<int64_t, int64_t>> per_device;
      for (Uid u = 0; u < t.events.size(); ++u) {
        const Event& e = t.events[u];
        if (e.cat != Cat::Kernel) continue;
        auto& [n, ns] = per_device[t.device(u)];
        ++n;
        ns += e.dur_ns;
      }
      auto expected = sql.rows(
          "SELECT deviceId, count(*), sum(\"end\" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL "
          "GROUP BY deviceId ORDER BY deviceId");
      REQUIRE(expected.size() == 2);  // two H100s in one capture
      REQUIRE(per_device.size() == expected.size());
      for (const auto& row : expected) {
        auto& [n, ns] = per_device[std::stoll(row[0])];
        CHECK(n == std::stoll(row[1]));
        CHECK(ns == std::stoll(row[2]));
      }

      // The report's kernel_summary: every kernel, the same total, and the
      // same five names on top (demangled names, as Kineto records them).
      auto summary = kernel_summary_ms(l.report);
      double total_ms = 0;
      for (const auto& [_, ms] : summary) total_ms += ms;
      auto sql_total = sql.rows("SELECT sum(\"end\" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL");
      CHECK(total_ms == doctest::Approx(std::stod(sql_total[0][0]) / 1e6).epsilon(1e-9));
      auto top = sql.rows(
          "SELECT s.value, sum(k.\"end\" - k.start) AS ns FROM CUPTI_ACTIVITY_KIND_KERNEL k "
          "JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value ORDER BY ns DESC LIMIT 5");
      std::vector<std::pair<double, std::string>> ranked;
      for (const auto& [name, ms] : summary) ranked.emplace_back(-ms, name);
      std::sort(ranked.begin(), ranked.end());
      for (size_t i = 0; i < top.size(); ++i) {
        CAPTURE(i);
        CHECK(ranked[i].second == top[i][0]);
        CHECK(-ranked[i].first == doctest::Approx(std::stod(top[i][1]) / 1e6).epsilon(1e-9));
      }

      // NVTX ranges: emit_nvtx ranges become cpu_ops named by the text
      // before ", op_id" / ", seq"; their count and time per name match.
      std::map<std::string, std::pair<int64_t, int64_t>> ops;
      for (Uid u = 0; u < t.events.size(); ++u) {
        const Event& e = t.events[u];
        if (e.cat != Cat::CpuOp) continue;
        auto& [n, ns] = ops[std::string(t.name(u))];
        ++n;
        ns += e.dur_ns;
      }
      auto ranges = sql.rows(
          "WITH r AS (SELECT coalesce(text, (SELECT value FROM StringIds WHERE id = textId)) AS "
          "txt, \"end\" - start AS ns FROM NVTX_EVENTS WHERE \"end\" IS NOT NULL AND eventType = "
          "59), n AS (SELECT CASE WHEN instr(txt, ', seq = ') > 0 THEN substr(txt, 1, "
          "instr(txt, ', seq = ') - 1) ELSE substr(txt, 1, instr(txt, ', op_id = ') - 1) END AS "
          "name, ns FROM r WHERE instr(txt, ', op_id = ') > 0) SELECT name, count(*), sum(ns) "
          "FROM n GROUP BY name");
      REQUIRE(ranges.size() > 10);
      CHECK(ops.size() == ranges.size());
      for (const auto& row : ranges) {
        CAPTURE(row[0]);
        auto it = ops.find(row[0]);
        REQUIRE(it != ops.end());
        CHECK(it->second.first == std::stoll(row[1]));
        CHECK(it->second.second == std::stoll(row[2]));
      }
    }
  }

  TEST_CASE("nsys: runtime launches link kernels to the emit_nvtx ops that issued them") {
    if (!have_samples()) return;
    Trace t = load_any_trace(kBefore);
    CallTree tree(t);
    // The flash-attention kernels sit under the op that launched them, as in
    // a Kineto trace: SQL finds the enclosing range of each launch.
    Sql sql(kBefore);
    auto expected = sql.rows(
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = "
        "k.shortName JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId "
        "WHERE s.value = 'flash_fwd_kernel' AND EXISTS (SELECT 1 FROM NVTX_EVENTS n WHERE "
        "n.globalTid = r.globalTid AND n.start <= r.start AND n.\"end\" >= r.\"end\" AND n.text "
        "LIKE 'flash_attn::_flash_attn_forward,%')");
    size_t linked = 0;
    for (Uid u = 0; u < t.events.size(); ++u) {
      if (t.events[u].cat != Cat::Kernel || t.name(u).find("flash_fwd_kernel") == std::string::npos)
        continue;
      for (Uid p = tree.parent(u); p != kNoUid; p = tree.parent(p))
        if (t.name(p) == "flash_attn::_flash_attn_forward") {
          ++linked;
          break;
        }
    }
    CHECK(linked == std::stoull(expected[0][0]));
    CHECK(linked > 0);
  }

  TEST_CASE("nsys: the published before/after facts") {
    if (!have_samples()) return;
    Loaded before = load_and_report(kBefore), after = load_and_report(kAfter);
    auto total = [](const Report& r) {
      double ms = 0;
      for (const auto& [_, v] : kernel_summary_ms(r)) ms += v;
      return ms;
    };
    auto flash = [](const Report& r) {
      double ms = 0;
      for (const auto& [name, v] : kernel_summary_ms(r))
        if (name.find("flash_fwd_kernel") != std::string::npos) ms += v;
      return ms;
    };
    // nsys-ai's reading-a-diff.md: 535.20 -> 488.84 ms of kernel time,
    // flash_fwd_kernel 272.32 -> 240.76 ms (-31.56 ms).
    CHECK(std::round(total(before.report) * 100) / 100 == doctest::Approx(535.20));
    CHECK(std::round(total(after.report) * 100) / 100 == doctest::Approx(488.84));
    CHECK(std::round(flash(before.report) * 100) / 100 == doctest::Approx(272.32));
    CHECK(std::round(flash(after.report) * 100) / 100 == doctest::Approx(240.76));
    CHECK(std::round((flash(after.report) - flash(before.report)) * 100) / 100 ==
          doctest::Approx(-31.56));
  }

  TEST_CASE("nsys: emit_nvtx texts") {
    auto a = nsys::parse_emit_nvtx(
        "aten::mm, seq = 3, op_id = 12, sizes = [[8, 16], [16, 4]], "
        "input_op_ids = [(11, 0)]");
    REQUIRE(a);
    CHECK(a->name == "aten::mm");
    CHECK(a->seq == 3);
    CHECK(a->op_id == 12);
    REQUIRE(a->sizes);
    CHECK(*a->sizes == std::vector<std::vector<int64_t>>{{8, 16}, {16, 4}});
    auto b = nsys::parse_emit_nvtx("FSDP::pre_forward (blocks.9, x), op_id = 7");
    REQUIRE(b);
    CHECK(b->name == "FSDP::pre_forward (blocks.9, x)");
    CHECK(b->seq == -1);
    CHECK(!b->sizes);
    auto c = nsys::parse_emit_nvtx("aten::add, op_id = 1, sizes = [[], [4]]");
    REQUIRE(c);
    CHECK(*c->sizes == std::vector<std::vector<int64_t>>{{}, {4}});
    CHECK(!nsys::parse_emit_nvtx("ncclGroupStart"));
    CHECK(!nsys::parse_emit_nvtx("step, 3"));
  }

  TEST_CASE("nsys: a hand-made export: shapes reach the op, the launch links its kernel") {
    TempDir tmp;
    std::string path = (tmp.path / "tiny.sqlite").string();
    {
      Sql db(path, true);
      db.exec(
          nsys_tables::kStringIds +
          "INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'void gemm<1>()'), "
          "(3, 'gemm');" +
          nsys_tables::kKernels +
          // pid 7 in bits 24.., tid 9 in bits 0..23
          "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (2000, 2500, 0, 1, 7, 42, 117440512, 2, "
          "3, 4, 2, 1, 128, 1, 1);" +
          nsys_tables::kRuntime +
          "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1100, 1200, 0, 117440521, 42, 1, 0);" +
          nsys_tables::kNvtx +
          "INSERT INTO NVTX_EVENTS VALUES (1000, 1300, 59, 'aten::mm, seq = 5, op_id = 1, sizes "
          "= [[8, 16], [16, 4]], input_op_ids = []', 117440521, NULL, 0);"
          "INSERT INTO NVTX_EVENTS VALUES (900, NULL, 34, 'a mark', 117440521, NULL, 0);");
    }
    Trace t = load_any_trace(path);
    REQUIRE(t.events.size() == 3);  // kernel, launch, op; the mark is left out
    CallTree tree(t);
    Uid kernel = kNoUid, op = kNoUid, launch = kNoUid;
    for (Uid u = 0; u < t.events.size(); ++u) {
      Cat c = t.events[u].cat;
      (c == Cat::Kernel ? kernel : c == Cat::CpuOp ? op : launch) = u;
    }
    CHECK(t.name(kernel) == "void gemm<1>()");
    CHECK(t.device(kernel) == 0);
    CHECK(t.stream(kernel) == 7);
    CHECK(t.events[kernel].dur_ns == 500);
    CHECK(t.name(launch) == "cudaLaunchKernel");
    CHECK(t.pid(launch).value == 7);
    CHECK(t.tid(launch).value == 9);
    CHECK(t.name(op) == "aten::mm");
    CHECK(t.sequence_number(op) == 5);
    const PyValue* dims = t.arg(op, "Input Dims");
    REQUIRE(dims != nullptr);
    CHECK(dims->size() == 2);
    CHECK((*dims)[0][1].i == 16);
    const PyValue* grid = t.arg(kernel, "grid");
    REQUIRE(grid != nullptr);
    CHECK((*grid)[0].i == 4);
    CHECK(tree.parent(kernel) == launch);
    CHECK(tree.parent(launch) == op);
  }

  TEST_CASE("nsys: bad inputs get a clear error, and no file is modified") {
    TempDir tmp;
    // A .nsys-rep: refused with the export command.
    fs::path rep = tmp.path / "run.nsys-rep";
    std::ofstream(rep) << "binary report";
    CHECK(error_of([&] { load_any_trace(rep.string()); }).find("nsys export --type sqlite") !=
          std::string::npos);

    // An SQLite database that is not an export.
    std::string other = (tmp.path / "other.sqlite").string();
    {
      Sql db(other, true);
      db.exec("CREATE TABLE notes (id INTEGER, body TEXT); INSERT INTO notes VALUES (1, 'x');");
    }
    CHECK(detect_input_format(other) == InputFormat::NsysSqlite);
    CHECK(error_of([&] { load_any_trace(other); }).find("not an Nsight Systems export") !=
          std::string::npos);

    // An older schema: a kernel table without shortName / without StringIds.
    std::string old_cols = (tmp.path / "old_columns.sqlite").string();
    {
      Sql db(old_cols, true);
      db.exec(
          "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
          "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);"
          "INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '2.1.0');"
          "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, \"end\" INTEGER, deviceId "
          "INTEGER, streamId INTEGER, demangledName INTEGER);");
    }
    std::string message = error_of([&] { load_any_trace(old_cols); });
    CHECK(message.find("schema 2.1.0") != std::string::npos);
    CHECK(message.find("no column shortName") != std::string::npos);
    CHECK(message.find("nsys export") != std::string::npos);
    std::string no_strings = (tmp.path / "old_tables.sqlite").string();
    {
      Sql db(no_strings, true);
      db.exec("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, \"end\" INTEGER);");
    }
    CHECK(error_of([&] { load_any_trace(no_strings); }).find("no StringIds table") !=
          std::string::npos);

    if (!have_samples()) return;
    // A truncated copy of a real export.
    std::string whole = file_bytes(k1s);
    std::string cut = (tmp.path / "cut.sqlite").string();
    std::ofstream(cut, std::ios::binary) << whole.substr(0, whole.size() / 2);
    message = error_of([&] { load_any_trace(cut); });
    CHECK(message.find("truncated") != std::string::npos);
    std::string tiny = (tmp.path / "tiny_cut.sqlite").string();
    std::ofstream(tiny, std::ios::binary) << whole.substr(0, 50);
    CHECK(error_of([&] { nsys::load_export(tiny); }).find("truncated") != std::string::npos);

    // A copy another connection holds an exclusive lock on.
    std::string locked = (tmp.path / "locked.sqlite").string();
    fs::copy_file(k1s, locked);
    {
      Sql writer(locked, true);
      writer.exec("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;");
      message = error_of([&] { load_any_trace(locked); });
      CHECK(message.find("locked by another process") != std::string::npos);
      writer.exec("ROLLBACK;");
    }

    // Read-only: loading leaves bytes and mtime as they were (a writable
    // copy, where a careless open could have written a journal or a header).
    std::string copy = (tmp.path / "copy.sqlite").string();
    fs::copy_file(kBefore, copy);
    auto mtime = fs::last_write_time(copy);
    std::string bytes = file_bytes(copy);
    Trace t = load_any_trace(copy);
    CHECK(t.events.size() > 0);
    CHECK(fs::last_write_time(copy) == mtime);
    CHECK(file_bytes(copy) == bytes);
    CHECK(!fs::exists(copy + "-journal"));
    CHECK(!fs::exists(copy + "-wal"));
  }
}

// Several GPUs in one capture: ranks, the multi-rank analyses, iterations
// and the step views compare uses, against SQL on the exports.
namespace {

int64_t to_i(const std::string& s) {
  return std::stoll(s);
}

// Per device of an export: the OS pid that ran its kernels (one each).
std::map<int64_t, int64_t> device_pids(Sql& sql) {
  std::map<int64_t, int64_t> out;
  for (const auto& row : sql.rows("SELECT DISTINCT deviceId, (globalPid >> 24) & 16777215 FROM "
                                  "CUPTI_ACTIVITY_KIND_KERNEL ORDER BY deviceId"))
    out[to_i(row[0])] = to_i(row[1]);
  return out;
}

// Step time as nsys-ai's diff defines it, from SQL rows: per device, the span
// of the kernels wholly inside [lo, hi] (every kernel when lo > hi), and its
// split into compute-only, NCCL-only, overlap and idle time.
struct Spans {
  int64_t step_ns = 0;
  double rounded_ms = 0;  // the four parts per device, each rounded to 0.01 ms, summed
};
Spans spans(Sql& sql, int64_t lo, int64_t hi) {
  std::string where = lo <= hi ? fmt::format(" AND k.start >= {} AND k.\"end\" <= {}", lo, hi) : "";
  Spans out;
  for (const auto& dev : sql.rows("SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL")) {
    auto rows = sql.rows(fmt::format(
        "SELECT k.start, k.\"end\", lower(s.value) LIKE '%nccl%' FROM CUPTI_ACTIVITY_KIND_KERNEL "
        "k JOIN StringIds s ON s.id = k.shortName WHERE k.deviceId = {}{}",
        dev[0], where));
    if (rows.empty()) continue;
    std::vector<std::pair<int64_t, int64_t>> compute, nccl;
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (const auto& r : rows) {
      (r[2] == "1" ? nccl : compute).push_back({to_i(r[0]), to_i(r[1])});
      first = std::min(first, to_i(r[0]));
      last = std::max(last, to_i(r[1]));
    }
    auto merge = [](std::vector<std::pair<int64_t, int64_t>> v) {
      std::sort(v.begin(), v.end());
      std::vector<std::pair<int64_t, int64_t>> m;
      for (auto iv : v)
        if (!m.empty() && iv.first <= m.back().second)
          m.back().second = std::max(m.back().second, iv.second);
        else
          m.push_back(iv);
      return m;
    };
    auto c = merge(compute), n = merge(nccl);
    int64_t cov_c = 0, cov_n = 0, both = 0;
    for (auto iv : c) cov_c += iv.second - iv.first;
    for (auto iv : n) cov_n += iv.second - iv.first;
    for (auto a : c)
      for (auto b : n)
        both += std::max<int64_t>(0, std::min(a.second, b.second) - std::max(a.first, b.first));
    const int64_t total = last - first;
    out.step_ns += total;
    for (int64_t part :
         {cov_c - both, cov_n - both, both, total - (cov_c - both) - (cov_n - both) - both})
      out.rounded_ms += std::round(static_cast<double>(part) / 1e4) / 100;
  }
  return out;
}

// nsys-ai's iteration 0 without markers, from SQL rows: the main thread
// (most launches of device 0's kernels), its kernels in start order, a new
// iteration where the GPU pauses over 2 ms (at that kernel's launch), and
// iteration 0's GPU window: the kernels launched inside its host window.
std::pair<int64_t, int64_t> gap_iteration0(Sql& sql) {
  auto rows = sql.rows(
      "WITH l AS (SELECT r.globalTid AS tid, r.start AS cs, r.\"end\" AS ce, k.start AS ks, "
      "k.\"end\" AS ke FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON "
      "r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24) WHERE "
      "k.deviceId = 0), m AS (SELECT tid FROM l GROUP BY tid ORDER BY count(*) DESC LIMIT 1) "
      "SELECT cs, ce, ks, ke FROM l WHERE tid = (SELECT tid FROM m) ORDER BY ks, cs");
  REQUIRE(rows.size() > 2);
  std::vector<int64_t> bounds{INT64_MAX};
  int64_t last_end = to_i(rows[0][3]), last_call = 0;
  for (size_t k = 0; k < rows.size(); ++k) {
    bounds[0] = std::min(bounds[0], to_i(rows[k][0]));
    last_call = std::max(last_call, to_i(rows[k][1]));
    if (k > 0 && to_i(rows[k][2]) - last_end > 2'000'000) bounds.push_back(to_i(rows[k][0]));
    if (k > 0) last_end = std::max(last_end, to_i(rows[k][3]));
  }
  std::sort(bounds.begin(), bounds.end());
  if (bounds.size() < 2) bounds.push_back(last_call);
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const auto& r : rows)
    if (to_i(r[0]) >= bounds[0] && to_i(r[0]) <= bounds[1] && to_i(r[1]) <= bounds[1]) {
      lo = std::min(lo, to_i(r[2]));
      hi = std::max(hi, to_i(r[3]));
    }
  return {lo, hi};
}

}  // namespace

TEST_SUITE("nsys") {
  TEST_CASE("nsys: a capture of two GPU processes is two ranks") {
    if (!have_samples()) return;
    Sql sql(kBefore);
    auto pids = device_pids(sql);
    REQUIRE(pids.size() == 2);
    std::vector<Trace> ranks = nsys::to_rank_traces(nsys::load_export(kBefore));
    REQUIRE(ranks.size() == 2);
    for (size_t r = 0; r < ranks.size(); ++r) {
      CAPTURE(r);
      const Trace& t = ranks[r];
      bool info = false;
      for (const auto& [key, text] : t.top_level_json)
        if (key == "distributedInfo") {
          info = true;
          CHECK(text == fmt::format("{{\"rank\":{},\"world_size\":2}}", r));
        }
      CHECK(info);
      // Rank r is the process of device r: its kernels, launches and ranges.
      const int64_t pid = pids.at(static_cast<int64_t>(r));
      auto k = sql.rows(
          fmt::format("SELECT count(*), sum(\"end\" - start), min(deviceId), max(deviceId) FROM "
                      "CUPTI_ACTIVITY_KIND_KERNEL WHERE (globalPid >> 24) & 16777215 = {}",
                      pid));
      auto rt = sql.rows(fmt::format(
          "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE (globalTid >> 24) & 16777215 = "
          "{}",
          pid));
      int64_t kernels = 0, ns = 0, runtime = 0;
      for (Uid u = 0; u < t.events.size(); ++u) {
        const Event& e = t.events[u];
        if (e.cat == Cat::Kernel) {
          ++kernels;
          ns += e.dur_ns;
          CHECK(t.device(u) == static_cast<int64_t>(r));
        } else if (e.cat == Cat::CudaRuntime) {
          ++runtime;
          CHECK(t.pid(u).value == pid);
        }
      }
      CHECK(kernels == to_i(k[0][0]));
      CHECK(ns == to_i(k[0][1]));
      CHECK(k[0][2] == std::to_string(r));
      CHECK(k[0][3] == std::to_string(r));
      CHECK(runtime == to_i(rt[0][0]));
    }
    // load_rank_traces gives the same split; other inputs stay one trace.
    CHECK(load_rank_traces(kBefore).size() == 2);
  }

  TEST_CASE("nsys: collectives and the critical path take the capture's processes as ranks") {
    if (!have_samples()) return;
    Sql sql(kBefore);
    // NCCL kernels carry no process-group args in an export: each device's
    // instances are matched by their order on the device (seq by start).
    auto nccl = sql.rows(
        "SELECT k.deviceId, k.\"end\" - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds "
        "s ON s.id = k.shortName WHERE s.value LIKE 'nccl%' ORDER BY k.deviceId, k.start");
    std::map<int64_t, std::vector<int64_t>> per_device;
    for (const auto& row : nccl) per_device[to_i(row[0])].push_back(to_i(row[1]));
    REQUIRE(per_device.size() == 2);
    REQUIRE(per_device[0].size() == per_device[1].size());
    auto result = collectives::collective_report({kBefore});
    CHECK(!result.single_rank);
    CHECK(result.report.ranks == std::vector<int64_t>{0, 1});
    REQUIRE(result.report.instances.size() == per_device[0].size());
    for (size_t i = 0; i < result.report.instances.size(); ++i) {
      const auto& inst = result.report.instances[i];
      CAPTURE(i);
      CHECK(inst.seq == static_cast<int64_t>(i));
      CHECK(inst.dur_us[0] == doctest::Approx(static_cast<double>(per_device[0][i]) / 1e3));
      CHECK(inst.dur_us[1] == doctest::Approx(static_cast<double>(per_device[1][i]) / 1e3));
    }
    auto verdict = collectives::straggler_verdict(result.report);
    CHECK(verdict.instances == per_device[0].size());

    auto loaded = critical_path::load_graph({kBefore});
    CHECK(loaded.graph.ranks == std::vector<int64_t>{0, 1});
    CHECK(loaded.graph.iterations_source == critical_path::kFromDetectedRepeats);
    auto a = critical_path::analyse(loaded.graph);
    CHECK(a.iterations.size() > 1);
    std::set<int64_t> on_path;
    for (const auto& c : a.contributors) on_path.insert(c.rank);
    CHECK(on_path == std::set<int64_t>{0, 1});

    // The one-second capture has no NCCL kernel: the ranks cannot be joined.
    std::string message;
    try {
      critical_path::load_graph({k1s});
    } catch (const critical_path::CriticalPathError& e) {
      message = e.what();
    }
    CHECK(message.find("has no collective kernels") != std::string::npos);
  }

  TEST_CASE("nsys: memory analysis is refused with the reason") {
    if (!have_samples()) return;
    Trace t = load_any_trace(kBefore);
    std::string message = error_of([&] { memory::analyse_memory(t); });
    CHECK(message.find("an Nsight Systems export has no allocator samples") != std::string::npos);
    CHECK(message.find("profile_memory=True") != std::string::npos);
  }

  TEST_CASE("nsys: ProfilerStep#N NVTX ranges are iterations") {
    TempDir tmp;
    std::string path = (tmp.path / "steps.sqlite").string();
    {
      Sql db(path, true);
      // Two steps on one thread (pid 7, tid 9), each launching two kernels.
      std::string sql =
          nsys_tables::kStringIds +
          "INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'void a()'), (3, "
          "'a'), (4, 'void b()'), (5, 'b');" +
          nsys_tables::kKernels + nsys_tables::kRuntime + nsys_tables::kNvtx;
      for (int step = 0; step < 2; ++step) {
        const int64_t base = 100000 + step * 100000;
        sql += fmt::format(
            "INSERT INTO NVTX_EVENTS VALUES ({}, {}, 59, 'ProfilerStep#{}', 117440521, NULL, 0);",
            base, base + 100000, step);
        for (int k = 0; k < 2; ++k) {
          const int64_t call = base + 1000 + k * 1000, corr = step * 2 + k + 1;
          sql += fmt::format(
              "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ({}, {}, 0, 117440521, {}, 1, 0);",
              call, call + 500, corr);
          sql += fmt::format(
              "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({}, {}, 0, 1, 7, {}, 117440512, "
              "{}, {}, 1, 1, 1, 1, 1, 1);",
              call + 5000, call + 5000 + 500 * (step + 1), corr, 2 + 2 * k, 3 + 2 * k);
        }
      }
      db.exec(sql);
    }
    auto loaded = critical_path::load_graph({path});
    CHECK(loaded.graph.iterations_source == critical_path::kFromProfilerStep);
    CHECK(loaded.graph.iterations.size() == 2);
    Trace t = load_any_trace(path);
    CallTree tree(t);
    auto views = step_views(t, tree);
    REQUIRE(views);
    CHECK(views->iterations_source == kStepsFromProfilerStep);
    REQUIRE(views->iterations.size() == 2);
    // Step s: kernels at base+6000 and base+7000, each 500 (s + 1) ns long.
    CHECK(views->iterations[0].step_ns == 7500 - 6000);
    CHECK(views->iterations[1].step_ns == 8000 - 6000);
    CHECK(views->iterations[1].kernel_ns == 2000);
  }

  TEST_CASE("nsys: compare's whole-capture and per-iteration views on the published pair") {
    if (!have_samples()) return;
    Trace before = load_any_trace(kBefore), after = load_any_trace(kAfter);
    CallTree tb(before), ta(after);
    Sql sb(kBefore), sa(kAfter);
    // Iterations as nsys-ai finds them without markers: GPU idle gaps.
    auto vb = step_views(before, tb, kStepsFromGpuGaps);
    auto va = step_views(after, ta, kStepsFromGpuGaps);
    REQUIRE(vb);
    REQUIRE(va);

    // Whole capture: sum over GPUs of each GPU's kernel span, and the kernel
    // time (535.20 -> 488.84 ms, published).
    Spans whole_b = spans(sb, 1, 0), whole_a = spans(sa, 1, 0);
    CHECK(vb->whole.step_ns == whole_b.step_ns);
    CHECK(va->whole.step_ns == whole_a.step_ns);
    CHECK(std::round(static_cast<double>(vb->whole.kernel_ns) / 1e4) / 100 ==
          doctest::Approx(535.20));
    CHECK(std::round(static_cast<double>(va->whole.kernel_ns) / 1e4) / 100 ==
          doctest::Approx(488.84));
    // The published step time 598.52 -> 598.46 ms: nsys-ai rounds each of
    // the four parts (compute-only, NCCL-only, overlap, idle) of each GPU to
    // 0.01 ms before summing; unrounded the before side is 598.51 ms.
    CHECK(whole_b.rounded_ms == doctest::Approx(598.52));
    CHECK(whole_a.rounded_ms == doctest::Approx(598.46));
    CHECK(std::round(static_cast<double>(vb->whole.step_ns) / 1e4) / 100 ==
          doctest::Approx(598.51));
    CHECK(std::round(static_cast<double>(va->whole.step_ns) / 1e4) / 100 ==
          doctest::Approx(598.46));

    // Iteration 0: jarvis's GPU window is the one SQL finds.
    auto [lo_b, hi_b] = gap_iteration0(sb);
    auto [lo_a, hi_a] = gap_iteration0(sa);
    REQUIRE(!vb->iterations.empty());
    REQUIRE(!va->iterations.empty());
    CHECK(vb->iterations[0].start_ns == lo_b);
    CHECK(vb->iterations[0].end_ns == hi_b);
    CHECK(va->iterations[0].start_ns == lo_a);
    CHECK(va->iterations[0].end_ns == hi_a);
    CHECK(vb->iterations[0].step_ns == spans(sb, lo_b, hi_b).step_ns);
    CHECK(va->iterations[0].step_ns == spans(sa, lo_a, hi_a).step_ns);
    // The published 482.87 -> 340.77 ms: nsys-ai rounds the window to 0.1 ms
    // (gpu_start_s / gpu_end_s with four decimals) before selecting the
    // kernels inside it; on the exact window jarvis reports 483.02 -> 341.09.
    auto round_window = [](int64_t ns) {
      return static_cast<int64_t>(std::llround(static_cast<double>(ns) / 1e5) * 100000);
    };
    CHECK(spans(sb, round_window(lo_b), round_window(hi_b)).rounded_ms == doctest::Approx(482.87));
    CHECK(spans(sa, round_window(lo_a), round_window(hi_a)).rounded_ms == doctest::Approx(340.77));
    CHECK(std::round(static_cast<double>(vb->iterations[0].step_ns) / 1e4) / 100 ==
          doctest::Approx(483.02));
    CHECK(std::round(static_cast<double>(va->iterations[0].step_ns) / 1e4) / 100 ==
          doctest::Approx(341.09));

    // The comparison: both views, the verdict on iteration 0 (-29.4 %).
    auto j = compare_step_views(*vb, *va, "before", "after");
    CHECK(j["verdict"]["view"] == "iteration 0");
    CHECK(j["verdict"]["verdict"] == "improvement_likely");
    CHECK(std::round(j["verdict"]["delta_pct"].get<double>() * 10) / 10 == doctest::Approx(-29.4));
    CHECK(j["whole_capture"]["delta_pct"].get<double>() > -0.02);
    CHECK(std::string(j["verdict"]["text"]).find("whole capture") != std::string::npos);
    CHECK(j["iteration"]["kernels"].size() > 0);
  }
}

// MCP end to end: an export loads through load_trace and its handle works
// with the trace tools; compare takes the pair.

TEST_SUITE("nsys") {
  TEST_CASE("nsys: MCP load_trace, ops_summary, insights and compare on exports") {
    if (!have_samples()) return;
    TempDir tmp;
    auto options = jarvis::mcp::testing::shared_root_options();
    options.roots.push_back(tmp.path.string());
    jarvis::mcp::testing::Harness h(options);
    h.initialize();
    auto loaded = h.tool_result(1, "load_trace", {{"path", kBefore}});
    Sql sql(kBefore);
    auto rows = sql.rows(
        "SELECT (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL) + (SELECT count(*) FROM "
        "CUPTI_ACTIVITY_KIND_MEMCPY) + (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET) + "
        "(SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) + (SELECT count(*) FROM "
        "CUPTI_ACTIVITY_KIND_RUNTIME) + (SELECT count(*) FROM NVTX_EVENTS WHERE \"end\" IS NOT "
        "NULL AND eventType IN (59, 60, 70, 71))");
    CHECK(loaded["events"]["total"].get<int64_t>() == std::stoll(rows[0][0]));
    auto kernels = sql.rows("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL");
    CHECK(loaded["events"]["kernel"].get<int64_t>() == std::stoll(kernels[0][0]));
    CHECK(loaded["platform"] == "CUDA");
    std::string handle = loaded["trace"];
    auto ops = h.tool_result(2, "ops_summary", {{"trace", handle}, {"top_n", 3}});
    REQUIRE(ops["rows"].size() > 0);
    CHECK(ops["rows"][0]["name"] == "flash_attn::_flash_attn_forward");
    auto insights = h.tool_result(3, "insights", {{"trace", handle}});
    CHECK(insights.contains("insights"));
    auto cmp = h.tool_result(4, "compare",
                             {{"reference_trace", kBefore},
                              {"target_trace", kAfter},
                              {"output_dir", (tmp.path / "cmp").string()}});
    CHECK(cmp.contains("gpu_timeline"));
    CHECK(cmp["ops_summary"].size() > 0);
    // Both step views, the verdict naming the one it used.
    REQUIRE(cmp["step_views"].is_object());
    CHECK(cmp["step_views"]["whole_capture"].is_object());
    CHECK(cmp["step_views"]["verdict"]["view"] == "iteration 0");
    CHECK(cmp["step_views"]["iterations"]["reference"]["source"] == "detected_repeats");
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
