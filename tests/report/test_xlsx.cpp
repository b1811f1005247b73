// write_xlsx: a valid zip/xlsx with one sheet per table, checked by reading
// the workbook back with Python's zipfile (an independent zip reader).
#include <doctest/doctest.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "golden.h"
#include "report/xlsx.h"
#include "report/xlsx_read.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("jarvis_xlsx_test." + std::to_string(getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Reads the xlsx with python3's zipfile: CRC check, member names, each
// member's compression method and general-purpose flags, and the text of the
// XML parts the test looks at.
nlohmann::json read_xlsx(const fs::path& path) {
  std::string script =
      "import json, sys, zipfile\n"
      "z = zipfile.ZipFile(sys.argv[1])\n"
      "out = {'bad': z.testzip(), 'names': z.namelist(), 'parts': {},\n"
      "       'methods': sorted({i.compress_type for i in z.infolist()}),\n"
      "       'flags': sorted({i.flag_bits for i in z.infolist()})}\n"
      "for n in z.namelist():\n"
      "    if n.endswith('.xml'): out['parts'][n] = z.read(n).decode('utf-8')\n"
      "print(json.dumps(out))\n";
  fs::path script_path = path.parent_path() / "read_xlsx.py";
  std::ofstream(script_path) << script;
  std::string cmd = "python3 '" + script_path.string() + "' '" + path.string() + "'";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  REQUIRE(pclose(p) == 0);
  return nlohmann::json::parse(out);
}

std::vector<std::string> sheet_names(const std::string& workbook_xml) {
  std::vector<std::string> names;
  std::regex re("<sheet name=\"([^\"]*)\"");
  for (std::sregex_iterator it(workbook_xml.begin(), workbook_xml.end(), re), end; it != end; ++it)
    names.push_back((*it)[1]);
  return names;
}

std::vector<Table> sample_tables() {
  Table ops("ops_summary", {"name", "count", "total_us", "is_gemm", "note"});
  auto& r1 = ops.add_row();
  r1 = {Cell("aten::mm"), Cell(int64_t{42}), Cell(1.5), Cell(true), Cell()};
  auto& r2 = ops.add_row();
  r2 = {Cell("aten::add"), Cell(int64_t{7}), Cell(std::nan("")), Cell(false), Cell("x")};
  Table long_a("a_very_long_table_name_that_exceeds_excel_limit_A", {"v"});
  long_a.add_row() = {Cell(int64_t{1})};
  Table long_b("a_very_long_table_name_that_exceeds_excel_limit_B", {"v"});
  long_b.add_row() = {Cell(int64_t{2})};
  Table odd("gpu/timeline: [x]*?", {"v"});
  odd.add_row() = {Cell(2.25)};
  return {ops, long_a, long_b, odd};
}

}  // namespace

TEST_CASE("xlsx: sheet names are valid, at most 31 chars and unique") {
  auto names = xlsx_sheet_names(sample_tables());
  REQUIRE(names.size() == 4);
  CHECK(names[0] == "ops_summary");
  CHECK(names[1] == "a_very_long_table_name_that_exc");
  CHECK(names[1].size() == 31);
  CHECK(names[2] == "a_very_long_table_name_that_e~2");
  CHECK(names[3] == "gpu_timeline_ _x___");
}

TEST_CASE("xlsx: workbook is a valid zip with one formatted sheet per table") {
  TempDir tmp;
  fs::path out = tmp.path / "nested" / "report.xlsx";
  write_xlsx(sample_tables(), out.string());
  REQUIRE(fs::exists(out));
  for (const auto& entry : fs::directory_iterator(out.parent_path()))
    CHECK(entry.path().filename() == "report.xlsx");  // no temp file left

  nlohmann::json x = read_xlsx(out);
  CHECK(x["bad"].is_null());  // every CRC checks out
  // Every part deflated at zlib's fastest level (lxw_workbook.cpp): minizip
  // records level 1 as general-purpose flag bits 1 and 2 ("super fast").
  CHECK(x["methods"] == nlohmann::json::array({8}));
  CHECK(x["flags"] == nlohmann::json::array({6}));
  auto names = x["names"].get<std::vector<std::string>>();
  CHECK(std::count(names.begin(), names.end(), "xl/workbook.xml") == 1);
  CHECK(std::count(names.begin(), names.end(), "xl/worksheets/sheet4.xml") == 1);
  auto sheets = sheet_names(x["parts"]["xl/workbook.xml"].get<std::string>());
  CHECK(sheets == xlsx_sheet_names(sample_tables()));

  std::string sheet1 = x["parts"]["xl/worksheets/sheet1.xml"].get<std::string>();
  CAPTURE(sheet1);
  // Frozen header row.
  CHECK(std::regex_search(
      sheet1, std::regex("<pane ySplit=\"1\" topLeftCell=\"A2\"[^>]*state=\"frozen\"")));
  // Numbers as numbers (no string type), NaN and missing cells left empty.
  CHECK(std::regex_search(sheet1, std::regex("<c r=\"B2\"><v>42</v></c>")));
  CHECK(std::regex_search(sheet1, std::regex("<c r=\"C2\"><v>1.5</v></c>")));
  CHECK(std::regex_search(sheet1, std::regex("<c r=\"D2\" t=\"b\"><v>1</v></c>")));
  CHECK(sheet1.find("r=\"C3\"") == std::string::npos);
  CHECK(sheet1.find("r=\"E2\"") == std::string::npos);
  // Text cells (a workbook this small keeps one copy of each text in
  // sharedStrings.xml) and the bold header style.
  std::string shared = x["parts"]["xl/sharedStrings.xml"].get<std::string>();
  CHECK(shared.find("aten::mm") != std::string::npos);
  CHECK(std::regex_search(sheet1, std::regex("<c r=\"A2\" t=\"s\"><v>[0-9]+</v></c>")));
  CHECK(std::regex_search(sheet1, std::regex("<c r=\"A1\" s=\"1\" t=\"[a-zA-Z]+\">")));
  std::string styles = x["parts"]["xl/styles.xml"].get<std::string>();
  CHECK(styles.find("<b/>") != std::string::npos);
  // Column widths were set.
  CHECK(std::regex_search(sheet1, std::regex("<col min=\"1\" max=\"1\" width=\"")));
}

TEST_CASE("xlsx: a large workbook streams its rows, a small one shares its strings; same cells") {
  // 119 rows and the header (counted as two) x 1000 columns = 121,000 cells:
  // over the in-memory bound (100,000); the same table cut to 50 rows is under it.
  Table big("big", {});
  for (int c = 0; c < 1000; ++c) big.columns.push_back(fmt::format("c{}", c));
  for (int r = 0; r < 119; ++r) {
    auto& row = big.add_row();
    for (int c = 0; c < 1000; ++c)
      row[c] = c % 3 == 0   ? Cell(fmt::format("op{}", (r + c) % 7))
               : c % 3 == 1 ? Cell(r * 1000.0 + c + 0.25)
                            : Cell(int64_t{r - c});
  }
  Table small = big;
  small.name = "small";
  small.rows.resize(50);
  TempDir tmp;
  for (const Table& t : {big, small}) {
    CAPTURE(t.name);
    fs::path out = tmp.path / (t.name + ".xlsx");
    write_xlsx({t}, out.string());
    nlohmann::json x = read_xlsx(out);
    CHECK(x["bad"].is_null());
    CHECK(x["flags"] == nlohmann::json::array({6}));  // level 1 in both modes
    std::string sheet = x["parts"]["xl/worksheets/sheet1.xml"].get<std::string>();
    bool streamed = t.name == "big";
    CHECK((sheet.find("t=\"inlineStr\"") != std::string::npos) == streamed);
    CHECK(x["parts"].contains("xl/sharedStrings.xml") == !streamed);
    std::vector<Table> back = read_xlsx_workbook(out.string());
    REQUIRE(back.size() == 1);
    CHECK(back[0].columns == t.columns);
    REQUIRE(back[0].rows.size() == t.rows.size());
    for (size_t r = 0; r < t.rows.size(); r += 7)
      for (size_t c = 0; c < t.columns.size(); c += 13) {
        CAPTURE(r);
        CAPTURE(c);
        CHECK(back[0].rows[r][c].text() == t.rows[r][c].to_csv_text(false));
      }
  }
}

TEST_CASE("xlsx: few cells with more than 8 MiB of text stream their rows too") {
  // 300 distinct texts of 30,000 characters: 9 MB in 300 cells.
  Table t("long_texts", {"text"});
  for (int r = 0; r < 300; ++r)
    t.add_row()[0] = Cell(fmt::format("{:05}", r) + std::string(29'995, 'a' + r % 26));
  TempDir tmp;
  fs::path out = tmp.path / "long.xlsx";
  write_xlsx({t}, out.string());
  nlohmann::json x = read_xlsx(out);
  CHECK(x["bad"].is_null());
  CHECK_FALSE(x["parts"].contains("xl/sharedStrings.xml"));
  std::vector<Table> back = read_xlsx_workbook(out.string());
  REQUIRE(back.size() == 1);
  REQUIRE(back[0].rows.size() == 300);
  CHECK(back[0].rows[299][0].text() == t.rows[299][0].text());
}

TEST_CASE("xlsx: a failed write leaves nothing behind and names the file") {
  TempDir tmp;
  fs::path blocker = tmp.path / "not_a_dir";
  std::ofstream(blocker) << "x";
  fs::path out = blocker / "report.xlsx";
  try {
    write_xlsx(sample_tables(), out.string());
    FAIL("no error");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find(out.string()) != std::string::npos);
  }
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("cli: report --xlsx writes one sheet per CSV sheet") {
  TempDir tmp;
  std::string trace =
      jarvis::golden::shared_dir() + "/conformance/mi300_compile_triton/trace.json.gz";
  fs::path out = tmp.path / "out";
  fs::path book = tmp.path / "book.xlsx";
  std::string cmd = std::string(JARVIS_BINARY) + " report '" + trace + "' --out '" + out.string() +
                    "' --xlsx '" + book.string() + "' > /dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::set<std::string> csv_sheets;
  for (const auto& entry : fs::directory_iterator(out / "perf_report_csvs"))
    if (entry.path().extension() == ".csv")
      csv_sheets.insert(entry.path().stem().string().substr(0, 31));
  REQUIRE_FALSE(csv_sheets.empty());
  nlohmann::json x = read_xlsx(book);
  CHECK(x["bad"].is_null());
  auto names = sheet_names(x["parts"]["xl/workbook.xml"].get<std::string>());
  CHECK(std::set<std::string>(names.begin(), names.end()) == csv_sheets);
  CHECK(names.size() == csv_sheets.size());
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
