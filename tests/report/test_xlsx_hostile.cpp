// Hostile .xlsx workbooks (issue 49, point 2): each input that used to crash,
// hang or allocate GBs in the reader (src/report/xlsx_read.cpp) is built here
// as a tiny zip and must be refused with a message saying what is wrong, in
// bounded time and memory. The memory attacks are refused before the
// allocation: each test checks the process's peak RSS grew by less than
// kMaxGrowthMb (the peak only rises, so this can miss growth hidden under an
// earlier peak, but not the GBs these inputs used to take in a fresh run).
#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "base/process_stats.h"
#include "mcp_harness.h"
#include "report/xlsx_read.h"
#include "sanitizer.h"
#include "test_loader_support.h"
#include "tiny_zip.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using json = nlohmann::json;
namespace fs = std::filesystem;
using jarvis::loader_test::run_jarvis;
using jarvis::loader_test::shell_quote;
using jarvis::loader_test::TempDir;
using jarvis::loader_test::write_file;
namespace zip = jarvis::tiny_zip;

namespace {

constexpr double kMaxGrowthMb = JARVIS_ASAN ? 400 : 200;
const std::string kLabel = "hostile.xlsx";
const std::string kRefused = kLabel + ": not a readable xlsx workbook: ";

struct Outcome {
  bool finished = false;
  bool refused = false;
  std::string message;  // the refusal's
  std::vector<Table> tables;
};

// Reads `bytes` on a thread of its own and waits at most `seconds`: a reader
// looping forever fails the test instead of hanging it (the thread is then
// left behind; the test binary exits with the failure).
Outcome read_bounded(std::string bytes, int seconds = JARVIS_ASAN ? 60 : 20) {
  auto result = std::make_shared<std::promise<Outcome>>();
  std::future<Outcome> done = result->get_future();
  std::thread([result, bytes = std::move(bytes)] {
    Outcome o;
    o.finished = true;
    try {
      o.tables = read_xlsx_workbook_from_memory(bytes, kLabel);
    } catch (const std::runtime_error& e) {
      o.refused = true;
      o.message = e.what();
    }
    result->set_value(std::move(o));
  }).detach();
  if (done.wait_for(std::chrono::seconds(seconds)) != std::future_status::ready) return {};
  return done.get();
}

// The refusal of `bytes`, checked to be one: in time, a runtime_error naming
// the workbook, and memory within kMaxGrowthMb.
std::string refusal(std::string bytes) {
  double peak_before = peak_rss_mb();
  Outcome o = read_bounded(std::move(bytes));
  REQUIRE_MESSAGE(o.finished, "the reader did not finish");
  CHECK(peak_rss_mb() - peak_before < kMaxGrowthMb);
  REQUIRE_MESSAGE(o.refused, "the workbook was accepted");
  CHECK(o.message.rfind(kRefused, 0) == 0);
  return o.message.substr(std::min(o.message.size(), kRefused.size()));
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A sheet of one header row naming columns "a" and "b", then `rows`.
std::string sheet_with(const std::string& rows) {
  return zip::sheet_xml(R"(<row r="1"><c r="A1" t="inlineStr"><is><t>a</t></is></c>)"
                        R"(<c r="B1" t="inlineStr"><is><t>b</t></is></c></row>)" +
                        rows);
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t k = 0; k < n; ++k) out += s;
  return out;
}

// A workbook exercising every cell kind, for the tests that cut it or flip
// its bytes, and as the control that the reader reads what it should.
std::string every_kind_workbook(bool deflate) {
  std::string shared =
      R"(<sst count="2" uniqueCount="2"><si><t>x &amp; &#x41;&#66;</t></si>)"
      R"(<si><r><t>rich</t></r><r><t xml:space="preserve"> text</t></r></si></sst>)";
  std::string rows =
      R"(<row r="1"><c r="A1" t="s"><v>1</v></c><c r="B1" t="inlineStr"><is><t>n</t></is></c>)"
      R"(<c r="C1" t="inlineStr"><is><t>flag</t></is></c><c r="D1" t="inlineStr"><is><t>f</t></is></c></row>)"
      R"(<row r="2"><c r="A2" t="s"><v>0</v></c><c r="B2"><v>1.5</v></c><c r="C2" t="b"><v>1</v></c>)"
      R"(<c r="D2" t="str"><f>A2</f><v>x &amp;</v></c></row>)"
      R"(<row r="3"><c t="s"><v>1</v></c><c/><c t="b"><v>0</v></c></row>)"
      R"(<row r="4"/>)";
  return zip::workbook(zip::sheet_xml(rows), shared, deflate);
}

}  // namespace

TEST_SUITE("xlsx hostile") {
  TEST_CASE("control: a small workbook reads, stored and deflated, every cell kind") {
    for (bool deflate : {false, true}) {
      CAPTURE(deflate);
      Outcome o = read_bounded(every_kind_workbook(deflate));
      REQUIRE(o.finished);
      REQUIRE_MESSAGE(!o.refused, o.message);
      REQUIRE(o.tables.size() == 1);
      const Table& t = o.tables[0];
      CHECK(t.name == "s1");
      CHECK(t.columns == std::vector<std::string>{"rich text", "n", "flag", "f"});
      REQUIRE(t.rows.size() == 3);
      CHECK(t.rows[0][0].text() == "x & AB");
      CHECK(t.rows[0][1].text() == "1.5");
      CHECK(t.rows[0][2].text() == "True");
      CHECK(t.rows[0][3].text() == "x &");
      CHECK(t.rows[1][0].text() == "rich text");
      CHECK(t.rows[1][1].missing());
      CHECK(t.rows[1][2].text() == "False");
      CHECK(t.rows[1][3].missing());
      for (const Cell& c : t.rows[2]) CHECK(c.missing());
    }
  }

  TEST_CASE("a cell reference without column letters is refused (was SIGSEGV)") {
    std::string why =
        refusal(zip::workbook(sheet_with(R"(<row r="2"><c r="3"><v>1</v></c></row>)")));
    CHECK(why == R"(cell reference "3" has no column letters)");
    // Also in the header row, and a reference without a valid row number.
    CHECK(refusal(zip::workbook(zip::sheet_xml(R"(<row><c r="7"/></row>)"))) ==
          R"(cell reference "7" has no column letters)");
    CHECK(refusal(zip::workbook(sheet_with(R"(<row><c r="A0"><v>1</v></c></row>)"))) ==
          R"(cell reference "A0" has no row number from 1 to 1048576)");
    CHECK(refusal(zip::workbook(sheet_with(R"(<row><c r="A1048577"><v>1</v></c></row>)"))) ==
          R"(cell reference "A1048577" has no row number from 1 to 1048576)");
    CHECK(refusal(zip::workbook(sheet_with(R"(<row><c r="B2x"><v>1</v></c></row>)"))) ==
          R"(cell reference "B2x" has no row number from 1 to 1048576)");
  }

  TEST_CASE("a <c> without </c> is refused (was an endless loop)") {
    std::string why = refusal(zip::workbook(sheet_with(R"(<row r="2"><c r="A2"><v>1</v></row>)")));
    CHECK(why == "<c> without </c> (at byte 0)");
    // A cell start tag without '>' inside its row.
    CHECK(refusal(zip::workbook(zip::sheet_xml(R"(<row r="1"><c r="A1"</row>)"))) ==
          "unterminated <c start tag (at byte 0)");
    CHECK(refusal(zip::workbook("<worksheet><sheetData><row><c r=\"A1\"")) ==
          "<row> without </row> (at byte 22)");
  }

  TEST_CASE("a <row> without </row> or '>' is refused (was GBs in seconds)") {
    std::string open_row = R"(<row r="2"><c r="A2"><v>1</v></c>)";
    CHECK(contains(refusal(zip::workbook(sheet_with(open_row))), "<row> without </row> (at byte "));
    // Cut off inside the start tag: nothing after it has '>'.
    CHECK(contains(refusal(zip::workbook("<worksheet><sheetData><row r=\"1\"")),
                   "unterminated <row start tag (at byte 22)"));
    // Many rows, the last one open: still one linear pass and one refusal.
    std::string many = repeat(R"(<row><c><v>1</v></c></row>)", 100000) + open_row;
    CHECK(contains(refusal(zip::workbook(sheet_with(many), {}, true)), "<row> without </row>"));
  }

  TEST_CASE("a column beyond XFD is refused; cells past the budget too (was 385 MB a row)") {
    CHECK(refusal(zip::workbook(sheet_with(R"(<row><c r="ZZZZZ1"><v>1</v></c></row>)"))) ==
          R"(cell reference "ZZZZZ1" is beyond column XFD (16384 columns))");
    CHECK(refusal(zip::workbook(sheet_with(R"(<row><c r="XFE2"><v>1</v></c></row>)"))) ==
          R"(cell reference "XFE2" is beyond column XFD (16384 columns))");
    // Column XFD itself is read: a header 16384 wide over three rows.
    std::string wide = zip::sheet_xml(
        R"(<row><c r="XFD1" t="inlineStr"><is><t>last</t></is></c></row>)" + repeat("<row/>", 3));
    Outcome ok = read_bounded(zip::workbook(wide));
    REQUIRE_MESSAGE(!ok.refused, ok.message);
    REQUIRE(ok.tables.size() == 1);
    CHECK(ok.tables[0].columns.size() == 16384);
    CHECK(ok.tables[0].columns.back() == "last");
    CHECK(ok.tables[0].rows.size() == 3);
    // ... but empty rows under it cost no XML: refused when the cells pass
    // 65536 + 2 per byte of sheet XML, long before GBs.
    std::string wide_many =
        zip::sheet_xml(R"(<row><c r="XFD1" t="inlineStr"><is><t>last</t></is></c></row>)" +
                       repeat("<row/>", 100000));
    std::string why = refusal(zip::workbook(wide_many, {}, true));
    CHECK(contains(why, "sheet s1 would take the workbook past "));
    CHECK(contains(why, " cells (rows x columns; limit 65536 + 2 per byte of sheet XML"));
    // Cells without a reference take the next column, and stop at XFD too.
    CHECK(refusal(zip::workbook(zip::sheet_xml("<row>" + repeat("<c/>", 16385) + "</row>"))) ==
          "a row has more than 16384 cells");
  }

  TEST_CASE("an entry declaring 2 GiB is refused before allocating (was 2 GB)") {
    auto entries = zip::workbook_entries(sheet_with(""), {}, true);
    entries[3].declared_size = 0x80000000u;
    CHECK(refusal(zip::build(entries)) ==
          "zip entry xl/worksheets/sheet1.xml declares 2147483648 bytes, more than the 256 MiB "
          "limit");
    // Under the limit but more than deflate can make of the compressed bytes.
    entries[3].declared_size = 100u << 20;
    CHECK(contains(refusal(zip::build(entries)), "compressed: more than deflate can produce"));
    // Headers declaring less or more than the data inflates to.
    entries[3].declared_size = 10;
    CHECK(refusal(zip::build(entries)) ==
          "zip entry xl/worksheets/sheet1.xml inflates to more than the 10 bytes it declares");
    size_t real = sheet_with("").size();
    entries[3].declared_size = static_cast<uint32_t>(real + 5);
    CHECK(refusal(zip::build(entries)) == "zip entry xl/worksheets/sheet1.xml inflates to " +
                                              std::to_string(real) + " bytes, not the " +
                                              std::to_string(real + 5) + " it declares");
    entries = zip::workbook_entries(sheet_with(""), {}, false);
    entries[3].declared_size = static_cast<uint32_t>(real + 1);
    CHECK(refusal(zip::build(entries)) == "stored zip entry xl/worksheets/sheet1.xml declares " +
                                              std::to_string(real + 1) + " bytes but holds " +
                                              std::to_string(real));
  }

  TEST_CASE("a shared string copied into many cells stops at the text budget") {
    // One 64 KiB shared string (deflates to ~100 bytes) in 30,000 cells
    // would be 2 GB of cell text; the budget for this 1 MB of sheet XML is
    // 16 MiB + 64 bytes per byte.
    std::string shared = "<sst><si><t>" + std::string(65536, 'k') + "</t></si></sst>";
    std::string rows = repeat(R"(<row><c t="s"><v>0</v></c></row>)", 30000);
    std::string why = refusal(zip::workbook(sheet_with(rows), shared, true));
    CHECK(contains(why, "sheet s1 would take the workbook's cell text past "));
  }

  TEST_CASE("truncated and garbage files are refused, never crash") {
    CHECK(refusal("") == "not a zip file (0 bytes)");
    CHECK(refusal("not a zip, just text long enough") ==
          "not a zip file (no end of central directory)");
    std::string good = every_kind_workbook(true);
    // Every prefix: the end record is gone, or what it points at is.
    for (size_t n = 0; n < good.size(); ++n) {
      CAPTURE(n);
      Outcome o = read_bounded(good.substr(0, n));
      REQUIRE(o.finished);
      CHECK(o.refused);
      CHECK(o.message.rfind(kRefused, 0) == 0);
    }
    // Every byte flipped: read or refused, with the right exception type.
    for (std::string workbook : {good, every_kind_workbook(false)}) {
      for (size_t k = 0; k < workbook.size(); ++k) {
        CAPTURE(k);
        std::string bad = workbook;
        bad[k] = static_cast<char>(bad[k] ^ 0x5A);
        Outcome o = read_bounded(bad);
        REQUIRE(o.finished);
        if (o.refused) CHECK(o.message.rfind(kRefused, 0) == 0);
      }
    }
    // A flipped byte in a stored entry's data fails its CRC-32.
    std::string stored = every_kind_workbook(false);
    size_t at = stored.find("<sheetData>");
    stored[at + 1] = 'S';
    CHECK(refusal(stored) == "zip entry xl/worksheets/sheet1.xml fails its CRC-32 check");
  }

  TEST_CASE("zip structures the reader does not take are refused by name") {
    std::string good = zip::workbook(sheet_with(""));
    size_t end_record = good.size() - 22;
    auto with_u16 = [](std::string s, size_t at, uint16_t v) {
      s[at] = static_cast<char>(v & 0xFF);
      s[at + 1] = static_cast<char>(v >> 8);
      return s;
    };
    auto with_u32 = [&](std::string s, size_t at, uint32_t v) {
      return with_u16(with_u16(std::move(s), at, v & 0xFFFF), at + 2, v >> 16);
    };
    CHECK(refusal(with_u16(good, end_record + 10, 0xFFFF)) == "zip64 archives are not supported");
    CHECK(refusal(with_u16(good, end_record + 10, 2000)) ==
          "zip central directory claims 2000 entries in " +
              std::to_string(good.size() - 22 - good.find("PK\x01\x02")) + " bytes");
    CHECK(refusal(with_u32(good, end_record + 16, 0x7FFFFFF0)) ==
          "zip central directory lies outside the file");
    CHECK(refusal(with_u16(good, end_record + 4, 1)) ==
          "multi-disk zip archives are not supported");
    size_t central = good.find("xl/worksheets/sheet1.xml", good.find("PK\x01\x02")) - 46;
    CHECK(refusal(with_u16(good, central + 8, 1)) ==
          "zip entry xl/worksheets/sheet1.xml is encrypted");
    CHECK(refusal(with_u16(good, central + 10, 12)) ==
          "zip entry xl/worksheets/sheet1.xml uses compression method 12 (only stored and "
          "deflated are read)");
    CHECK(refusal(with_u32(good, central + 42, 0x0FFFFFFF)) ==
          "truncated zip: a header runs past the end of the file");
    auto entries = zip::workbook_entries(sheet_with(""));
    entries.push_back(entries[3]);
    CHECK(refusal(zip::build(entries)) == "duplicate zip entry xl/worksheets/sheet1.xml");
  }

  TEST_CASE("bad XML contents are refused with what is wrong") {
    std::string cell = R"(<row><c t="s"><v>5</v></c></row>)";
    CHECK(refusal(zip::workbook(sheet_with(cell), "<sst><si><t>x</t></si></sst>")) ==
          R"(shared string index "5" is not one of the 1 shared strings)");
    CHECK(refusal(zip::workbook(sheet_with(R"(<row><c t="s"><v>-1</v></c></row>)"))) ==
          R"(shared string index "-1" is not one of the 0 shared strings)");
    CHECK(refusal(zip::workbook(sheet_with(R"(<row><c><v>&#xZZ;</v></c></row>)"))) ==
          R"(bad character reference "&#xZZ;")");
    CHECK(refusal(zip::workbook(sheet_with(R"(<row><c><v>&#1114112;</v></c></row>)"))) ==
          R"(bad character reference "&#1114112;")");
    CHECK(refusal(zip::workbook(sheet_with(R"(<row><c><v>1</c></row>)"))) ==
          "<v> without </v> (at byte 0)");
    CHECK(refusal(zip::workbook(sheet_with(""), "<sst><si><t>x</t>")) ==
          "<si> without </si> (at byte 5)");
    // One sheet file listed twice would be read twice.
    auto entries = zip::workbook_entries(sheet_with(""));
    entries[1].data = R"(<workbook><sheets><sheet name="a" r:id="rId1"/>)"
                      R"(<sheet name="b" r:id="rId1"/></sheets></workbook>)";
    CHECK(refusal(zip::build(entries)) == "xl/workbook.xml lists xl/worksheets/sheet1.xml twice");
  }

  TEST_CASE("scans stay linear: 4 MB of '&' and 1M '<t ' before one '>' read in time") {
    std::string amps = "<sst><si><t>" + std::string(size_t{4} << 20, '&') + "</t></si></sst>";
    Outcome o =
        read_bounded(zip::workbook(sheet_with(R"(<row><c t="s"><v>0</v></c></row>)"), amps, true));
    REQUIRE(o.finished);
    REQUIRE_MESSAGE(!o.refused, o.message);
    CHECK(o.tables[0].rows[0][0].text().size() == size_t{4} << 20);
    // Each "<t " used to search to the one far '>' again.
    std::string opens = "<sst><si>" + repeat("<t ", size_t{1} << 20) + "/></si></sst>";
    o = read_bounded(zip::workbook(sheet_with(R"(<row><c t="s"><v>0</v></c></row>)"), opens, true));
    REQUIRE(o.finished);
    REQUIRE_MESSAGE(!o.refused, o.message);
    CHECK(o.tables[0].rows[0][0].missing());
  }

  TEST_CASE("a file over the size limit is refused before it is read") {
    TempDir dir;
    fs::path big = dir.path / "big.xlsx";
    write_file(big, "");
    fs::resize_file(big, xlsx_limits::kMaxFileBytes + 1);  // sparse: no disk used
    double peak_before = peak_rss_mb();
    try {
      read_xlsx_workbook(big.string());
      FAIL("accepted");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()) ==
            big.string() + ": not a readable xlsx workbook: file is larger than the 256 MiB limit");
    }
    CHECK(peak_rss_mb() - peak_before < kMaxGrowthMb);
  }

  TEST_CASE("the CLI and the MCP server refuse a hostile workbook and go on") {
    TempDir dir;
    std::string bad = (dir.path / "bad.xlsx").string();
    write_file(bad, zip::workbook(sheet_with(R"(<row r="2"><c r="3"><v>1</v></c></row>)")));
    auto run = run_jarvis("compare " + shell_quote(bad) + " " + shell_quote(bad) + " --out " +
                          shell_quote((dir.path / "out").string()));
    INFO(run.output);
    CHECK(run.exit_code != 0);
    CHECK(run.exit_code < 128);  // a status, not a signal
    CHECK(contains(run.output, bad + ": not a readable xlsx workbook: cell reference \"3\" has "
                                     "no column letters"));

    mcp::ServerOptions options;
    options.roots = {dir.path.string()};
    mcp::testing::Harness h(options);
    h.initialize();
    json reply = h.call_tool(1, "compare",
                             {{"reference_trace", bad},
                              {"target_trace", bad},
                              {"reference_tag", "a"},
                              {"target_tag", "b"}});
    REQUIRE(reply.contains("result"));
    CHECK(reply["result"]["isError"] == true);
    std::string text = reply["result"]["content"][0]["text"];
    CHECK(contains(text, "cell reference \"3\" has no column letters"));
    CHECK(h.request(2, "tools/list").contains("result"));
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
