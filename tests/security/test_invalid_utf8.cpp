// Issue 74 points 5 and 9: text that is not valid UTF-8 (a SQL value, a name
// in an Nsight export or a rocprofv3 CSV) never ends a call in -32603 and
// never reaches an output as it is: every reply, CSV, workbook, HTML page,
// markdown text and SQLite export holds valid UTF-8, with U+FFFD for each
// bad byte; a BLOB is written as its SQL hex literal, its column named.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sqlite3.h>

#include <fstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "mcp/result_shape.h"
#include "mcp_harness.h"
#include "report/xlsx_read.h"
#include "test_loader_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::loader_test;
using json = nlohmann::json;

const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD
const std::string kBadQuery = "SELECT CAST(x'ff00fe' AS TEXT) AS t, x'ff' AS b";
// ff -> U+FFFD, 00 stays, fe -> U+FFFD.
const std::string kBadQueryText = kReplacement + std::string(1, '\0') + kReplacement;

// RFC 3629 UTF-8, decoded here without the code under test.
bool is_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b >> 6) != 2) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// One cpu_op launching one kernel (valid UTF-8: Kineto JSON can hold no other).
const std::string kKinetoTrace =
    R"({"traceEvents":[)"
    R"({"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":0,"dur":5},)"
    R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,)"
    R"("dur":1,"args":{"correlation":1}},)"
    R"({"ph":"s","cat":"ac2g","name":"ac2g","id":1,"pid":1,"tid":1,"ts":1},)"
    R"({"ph":"X","cat":"kernel","name":"add_kernel","pid":0,"tid":7,"ts":3,"dur":2,)"
    R"("args":{"correlation":1,"stream":7,"device":0}},)"
    R"({"ph":"f","bp":"e","cat":"ac2g","name":"ac2g","id":1,"pid":0,"tid":7,"ts":3}]})";

void check_bad_query_result(const json& result) {
  REQUIRE(result["rows"].size() == 1);
  CHECK(result["rows"][0][0] == kBadQueryText);
  CHECK(result["rows"][0][1] == "x'ff'");
  CHECK(result["blob_columns"] == json::array({"b"}));
  CHECK(result["blob_encoding"] == "sql_hex_literal");
}

TEST_CASE(
    "issue 74 point 5: query_sql over stdio answers invalid UTF-8 text, with and without "
    "workers") {
  TempDir dir;
  write_file(dir.path / "t.json", kKinetoTrace);
  for (const char* isolate : {"off", "on"}) {
    CAPTURE(isolate);
    jarvis::testing::Child child({JARVIS_BINARY, "--no-cache", "serve", "--stdio", "--root",
                                  dir.path.string(), "--isolate-calls", isolate});
    child.send(json{{"jsonrpc", "2.0"},
                    {"id", 0},
                    {"method", "initialize"},
                    {"params",
                     {{"protocolVersion", "2025-06-18"},
                      {"capabilities", json::object()},
                      {"clientInfo", {{"name", "t"}, {"version", "0"}}}}}}
                   .dump());
    REQUIRE_FALSE(child.read_line().empty());
    child.send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    child.send(
        json{{"jsonrpc", "2.0"},
             {"id", 1},
             {"method", "tools/call"},
             {"params",
              {{"name", "query_sql"},
               {"arguments", {{"trace", (dir.path / "t.json").string()}, {"sql", kBadQuery}}}}}}
            .dump());
    const std::string line = child.read_line();
    INFO(line);
    CHECK(is_utf8(line));
    const json reply = json::parse(line);
    REQUIRE(reply.contains("result"));
    CHECK_FALSE(reply["result"].value("isError", false));
    check_bad_query_result(reply["result"]["structuredContent"]);
    child.close_stdin();
    CHECK(child.wait_exit() == 0);
  }
}

TEST_CASE("issue 74 point 5: jarvis sql writes valid UTF-8 in every format") {
  TempDir dir;
  write_file(dir.path / "t.json", kKinetoTrace);
  const std::string trace = shell_quote((dir.path / "t.json").string());
  for (const char* format : {"table", "csv", "json"}) {
    CAPTURE(format);
    auto r =
        run_jarvis(fmt::format("--no-cache sql {} \"{}\" --format {}", trace, kBadQuery, format));
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(is_utf8(r.output));
    CHECK(r.output.find(kReplacement) != std::string::npos);
    CHECK(r.output.find("x'ff'") != std::string::npos);
  }
  auto r = run_jarvis(fmt::format("--no-cache sql {} \"{}\" --format json", trace, kBadQuery));
  const json rows = json::parse(r.output);
  CHECK(rows[0]["t"] == kBadQueryText);
  CHECK(rows[0]["b"] == "x'ff'");
}

TEST_CASE("issue 74 point 5: a tool result with invalid UTF-8 is repaired, never -32603") {
  // The last guard: a handler that returns bytes that are not UTF-8 (in a
  // value, a key and its text) still gets a result every client can read.
  auto& handlers = mcp::registered_tool_handlers();
  const mcp::ToolHandler original = handlers.at("list_traces");
  handlers["list_traces"] = [](const json&, mcp::ToolContext&) {
    json traces = json::array({json{{"trace", "t\xff"},
                                    {"path", "/x/\xc3("},
                                    {"platform", "CUDA"},
                                    {"gpu_name", "\xed\xa0\x80"},  // a surrogate
                                    {"events", 1},
                                    {"file_bytes", 1}}});
    return mcp::ToolResult{{{"traces", traces}}, "list \xfe"};
  };
  struct Restore {
    mcp::ToolHandler h;
    ~Restore() { mcp::registered_tool_handlers()["list_traces"] = h; }
  } restore{original};
  mcp::testing::Harness h;
  h.initialize();
  json reply = h.call_tool(1, "list_traces", json::object());
  REQUIRE(reply.contains("result"));
  const std::string dumped = reply.dump();  // strict: throws on invalid UTF-8
  CHECK(is_utf8(dumped));
  const json& t = reply["result"]["structuredContent"]["traces"][0];
  CHECK(t["trace"] == "t" + kReplacement);
  CHECK(t["path"] == "/x/" + kReplacement + "(");
  CHECK(t["gpu_name"] == kReplacement + kReplacement + kReplacement);
  CHECK(reply["result"]["content"][0]["text"] == "list " + kReplacement);

  json keys = {{"k\xff", {"v\xfe", 1}}};
  mcp::valid_utf8_strings(keys);
  CHECK(keys == json{{"k" + kReplacement, {"v" + kReplacement, 1}}});
}

// A hand-made Nsight Systems export (the tables jarvis reads) whose kernel
// and NVTX op names hold bytes that are not UTF-8 (SQLite keeps them).
void write_nsys_export(const fs::path& path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  const std::string sql =
      "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, \"end\" INTEGER NOT "
      "NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
      "correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName "
      "INTEGER NOT NULL, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY "
      "INTEGER, blockZ INTEGER);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, \"end\" INTEGER NOT "
      "NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId "
      "INTEGER NOT NULL, returnValue INTEGER NOT NULL);"
      "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, \"end\" INTEGER, eventType INTEGER NOT "
      "NULL, text TEXT, globalTid INTEGER, textId INTEGER, domainId INTEGER);"
      // "void gemm\xff<1>()" and "gemm\xfe"
      "INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), "
      "(2, CAST(X'766f69642067656d6dff3c313e2829' AS TEXT)), (3, CAST(X'67656d6dfe' AS TEXT));"
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (2000, 2500, 0, 1, 7, 42, 117440512, 2, 3, "
      "4, 2, 1, 128, 1, 1);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1100, 1200, 0, 117440521, 42, 1, 0);"
      // "aten::mm\xff, seq = 5, op_id = 1, sizes = ..."
      "INSERT INTO NVTX_EVENTS VALUES (1000, 1300, 59, CAST(X'6174656e3a3a6d6dff' AS TEXT) || "
      "', seq = 5, op_id = 1, sizes = [[8, 16], [16, 4]], input_op_ids = []', 117440521, NULL, "
      "0);";
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  INFO((error ? error : ""));
  sqlite3_free(error);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

// Every file under `dir` (workbooks: every cell) is valid UTF-8; the number
// of them that hold U+FFFD (a name that came through).
size_t check_outputs(const fs::path& dir) {
  size_t with_replacement = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const fs::path& p = entry.path();
    CAPTURE(p.string());
    if (p.extension() == ".gz") continue;  // compressed: its JSON was checked by the loader
    std::string text;
    if (p.extension() == ".xlsx") {
      for (const Table& sheet : read_xlsx_workbook(p.string()))
        for (const auto& row : sheet.rows)
          for (const Cell& c : row)
            if (c.is_text()) text += c.text() + "\n";
    } else if (p.extension() == ".sqlite") {
      continue;  // checked by its own query below
    } else {
      text = read_bytes(p);
    }
    CHECK(is_utf8(text));
    with_replacement += text.find(kReplacement) != std::string::npos;
  }
  return with_replacement;
}

// Every TEXT value of an SQLite file's tables, checked.
void check_sqlite_text(const fs::path& path, size_t& with_replacement) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  std::vector<std::string> tables;
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table'", -1, &st,
                             nullptr) == SQLITE_OK);
  while (sqlite3_step(st) == SQLITE_ROW)
    tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  sqlite3_finalize(st);
  for (const std::string& table : tables) {
    CAPTURE(table);
    REQUIRE(sqlite3_prepare_v2(db, ("SELECT * FROM \"" + table + "\"").c_str(), -1, &st, nullptr) ==
            SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW)
      for (int c = 0; c < sqlite3_column_count(st); ++c) {
        if (sqlite3_column_type(st, c) != SQLITE_TEXT) continue;
        const std::string v(reinterpret_cast<const char*>(sqlite3_column_text(st, c)),
                            static_cast<size_t>(sqlite3_column_bytes(st, c)));
        CHECK(is_utf8(v));
        with_replacement += v.find(kReplacement) != std::string::npos;
      }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
}

TEST_CASE("issue 74 point 9: names that are not UTF-8 reach no output as they are (Nsight)") {
  TempDir dir;
  const fs::path trace = dir.path / "bad_names.sqlite";
  write_nsys_export(trace);
  const fs::path out = dir.path / "out";
  auto report = run_jarvis(fmt::format("--no-cache report {} --out {} --html {}",
                                       shell_quote(trace.string()), shell_quote(out.string()),
                                       shell_quote((out / "report.html").string())));
  INFO(report.output);
  REQUIRE(report.exit_code == 0);
  auto prepare = run_jarvis(fmt::format("--no-cache prepare {} --platform MI300X --out {}",
                                        shell_quote(trace.string()),
                                        shell_quote((dir.path / "prepared").string())));
  REQUIRE(prepare.exit_code == 0);
  // analyze prints its markdown summary; its metrics files join the prepared directory.
  auto analyze = run_jarvis("--no-cache analyze " + shell_quote((dir.path / "prepared").string()));
  REQUIRE(analyze.exit_code == 0);
  CHECK(is_utf8(analyze.output));
  auto exported =
      run_jarvis(fmt::format("--no-cache sql {} --export {}", shell_quote(trace.string()),
                             shell_quote((dir.path / "export.sqlite").string())));
  REQUIRE(exported.exit_code == 0);

  // CSV sheets, the workbook and the HTML page carry the repaired names.
  CHECK(check_outputs(out) >= 4);
  CHECK(check_outputs(dir.path / "prepared") >= 2);
  size_t exported_names = 0;
  check_sqlite_text(dir.path / "export.sqlite", exported_names);
  CHECK(exported_names >= 2);  // the kernel's and the op's names
}

TEST_CASE("issue 74 point 9: a rocprofv3 CSV whose kernel name is not UTF-8 (report, SQL, MCP)") {
  TempDir dir;
  const fs::path input = dir.path / "rocprof";
  fs::copy(fs::path(JARVIS_SOURCE_DIR) / "tests/rocprof/csv_908", input);
  std::string trace = read_bytes(input / "908_kernel_trace.csv");
  const std::string name = "__amd_rocclr_copyBuffer.kd";
  REQUIRE(trace.find(name) != std::string::npos);
  trace.replace(trace.find(name), name.size(), "bad_\xff\xfe_\xc3(.kd");
  write_file(input / "908_kernel_trace.csv", trace);

  const fs::path out = dir.path / "out";
  auto report = run_jarvis(fmt::format("--no-cache report {} --out {}", shell_quote(input.string()),
                                       shell_quote(out.string())));
  INFO(report.output);
  REQUIRE(report.exit_code == 0);
  // kernel_summary.csv, the kernel counters and the workbook name the kernel.
  CHECK(check_outputs(out) >= 3);
  auto sql = run_jarvis(
      fmt::format("--no-cache sql {} \"SELECT DISTINCT name FROM events WHERE name LIKE 'bad%'\" "
                  "--format json",
                  shell_quote(input.string())));
  CHECK(is_utf8(sql.output));
  CHECK(sql.output.find("bad_" + kReplacement + kReplacement + "_" + kReplacement + "(.kd") !=
        std::string::npos);

  mcp::ServerOptions options;
  options.roots = {dir.path.string()};
  mcp::testing::Harness h(options);
  h.initialize();
  json loaded = h.tool_result(1, "load_trace", {{"path", input.string()}});
  json summary = h.call_tool(2, "ops_summary", {{"trace", loaded["trace"]}});
  CHECK(is_utf8(summary.dump()));
  CHECK(summary.dump().find("bad_\\ufffd") == std::string::npos);  // raw U+FFFD, not escaped
  CHECK(summary.dump().find("bad_" + kReplacement) != std::string::npos);
}

TEST_CASE("issue 74 point 9: a trace file name and findings that are not UTF-8 (every writer)") {
  // A file name is bytes: the HTML report's title carried "ex\xff\xfe" as it
  // was, and render-findings passed a findings file's bytes through cmark.
  TempDir dir;
  const fs::path trace = dir.path / "ex\xff\xfe.json.gz";
  fs::copy_file(fs::path(JARVIS_SOURCE_DIR) / "examples/example_trace.json.gz", trace);
  const std::string t = shell_quote(trace.string());
  const fs::path out = dir.path / "out";
  const auto o = [&](const std::string& name) { return shell_quote((out / name).string()); };
  fs::create_directories(out);
  for (const std::string& args :
       {fmt::format("report {} --out {} --html {} --xlsx {}", t, o("rep"), o("rep.html"),
                    o("rep.xlsx")),
        fmt::format("prepare {} --out {}", t, o("prep")), fmt::format("analyze {}", o("prep")),
        fmt::format("insights {} --json {}", t, o("insights.json")),
        fmt::format("critical-path {} --out {}", t, o("cp")),
        fmt::format("what-if {} --category gemm --factor 0.5 --out {}", t, o("wi")),
        fmt::format("memory {} --progress none", t),
        fmt::format("sql {} --export {}", t, o("export.sqlite"))}) {
    CAPTURE(args);
    auto run = run_jarvis("--no-cache " + args);
    INFO(run.output);
    // memory refuses the example trace (no [memory] events), naming it.
    CHECK(run.exit_code == (args.rfind("memory", 0) == 0 ? 1 : 0));
  }
  write_file(out / "prep/category_findings/gemm_findings.md",
             "# GEMM findings \xff\xfe\n\n## Overview\nslow \xc3( kernel \xed\xa0\x80 here\n\n"
             "| a | b |\n|---|---|\n| \xff | 1 |\n");
  auto rendered = run_jarvis(
      fmt::format("--no-cache render-findings {} --out {}", o("prep"), o("findings.html")));
  INFO(rendered.output);
  REQUIRE(rendered.exit_code == 0);
  fs::remove(out / "prep/category_findings/gemm_findings.md");  // the input, not an output
  // The report page names the trace; the findings page holds the findings.
  CHECK(check_outputs(out) >= 2);
  CHECK(read_bytes(out / "rep.html").find("ex" + kReplacement + kReplacement + ".json.gz") !=
        std::string::npos);
  CHECK(read_bytes(out / "findings.html").find("GEMM findings " + kReplacement + kReplacement) !=
        std::string::npos);
  size_t exported_names = 0;
  check_sqlite_text(out / "export.sqlite", exported_names);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
