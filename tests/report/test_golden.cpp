// Tests of the golden-comparison harness itself: it must catch real
// differences and accept the spelling variants pandas produces.
#include <doctest/doctest.h>

#include "golden.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::Cell;
using jarvis::Table;
using jarvis::golden::cells_equal;
using jarvis::golden::compare_tables;

TEST_CASE("golden harness: numbers") {
  CHECK(cells_equal("1.5", "1.5"));
  CHECK(cells_equal("np.float64(1.5)", "1.5"));
  CHECK(cells_equal("1.5", "np.float64(1.5)"));
  CHECK_FALSE(cells_equal("1.0", "1.001"));  // 1e-3 relative
  CHECK(cells_equal("1.0", "1.000001"));     // 1e-6 relative
  CHECK(cells_equal("0.0", "1e-12"));        // tiny absolute tolerance near 0
  CHECK_FALSE(cells_equal("0.0", "1e-6"));
  CHECK(cells_equal("220", "220.0"));
  CHECK_FALSE(cells_equal("12", "13"));
}

TEST_CASE("golden harness: missing spellings") {
  CHECK(cells_equal("", "nan"));
  CHECK(cells_equal("None", ""));
  CHECK(cells_equal("nan", "None"));
  CHECK_FALSE(cells_equal("", "0"));
  CHECK_FALSE(cells_equal("None", "'None'"));
}

TEST_CASE("golden harness: structured cells") {
  CHECK(cells_equal("((8944, 1024), (1024, 2816))", "((8944,1024),(1024,2816))"));
  CHECK_FALSE(cells_equal("((8944, 1024), (1024, 2816))", "((1024, 2816), (8944, 1024))"));
  CHECK(cells_equal("((16, 559, 1),)", "((16, 559, 1),)"));
  CHECK_FALSE(cells_equal("(1, 2)", "[1, 2]"));  // tuple vs list is a real difference
  CHECK(cells_equal("['GEMM']", "[\"GEMM\"]"));
  CHECK(cells_equal("[{'name': 'k', 'stream': 0, 'mean_duration_us': np.float64(2.5)}]",
                    "[{'stream': 0, 'name': 'k', 'mean_duration_us': 2.5000000001}]"));
  CHECK_FALSE(cells_equal("[{'name': 'k', 'mean_duration_us': np.float64(2.5)}]",
                          "[{'name': 'k', 'mean_duration_us': 2.5025}]"));
  CHECK_FALSE(cells_equal("[{'name': 'k'}]", "[{'name': 'j'}]"));
  CHECK(cells_equal("{'a': None}", "{'a': nan}"));
  CHECK(cells_equal("True", "True"));
  CHECK_FALSE(cells_equal("True", "False"));
  CHECK(cells_equal("Memcpy DtoD (Device -> Device)", "Memcpy DtoD (Device -> Device)"));
  CHECK_FALSE(cells_equal("aten::mm", "aten::bmm"));
  CHECK(cells_equal("\"it's\"", "\"it's\""));
}

namespace {
Table small_table(std::vector<std::vector<Cell>> rows) {
  Table t("t", {"name", "value", "count"});
  for (auto& r : rows) t.rows.push_back(std::move(r));
  return t;
}
}  // namespace

TEST_CASE("golden harness: tables") {
  Table expected = jarvis::parse_csv("name,value,count\na,1.5,1\nb,2.0,2\nc,3.0,3\n", "t");
  Table good = small_table({{"a", 1.5, 1}, {"b", 2.0, 2}, {"c", 3.0, 3}});
  CHECK(compare_tables(expected, good).ok());

  Table off = small_table({{"a", 1.5, 1}, {"b", 2.002, 2}, {"c", 3.0, 3}});
  auto r = compare_tables(expected, off);
  CHECK_FALSE(r.ok());
  CHECK(r.matched_rows == 2);
  REQUIRE(r.problems.size() == 1);
  CHECK(r.problems[0].find("value") != std::string::npos);

  // an int column written as float is a pandas dtype difference
  Table as_float = small_table({{"a", 1.5, 1.0}, {"b", 2.0, 2.0}, {"c", 3.0, 3.0}});
  CHECK_FALSE(compare_tables(expected, as_float).ok());

  Table shuffled = small_table({{"c", 3.0, 3}, {"a", 1.5, 1}, {"b", 2.0, 2}});
  CHECK_FALSE(compare_tables(expected, shuffled).ok());
  jarvis::golden::Options by_name;
  by_name.key_columns = {"name"};
  CHECK(compare_tables(expected, shuffled, by_name).ok());

  Table extra = small_table({{"a", 1.5, 1}, {"b", 2.0, 2}, {"c", 3.0, 3}, {"d", 4.0, 4}});
  CHECK_FALSE(compare_tables(expected, extra).ok());
  by_name.allow_extra_rows = true;
  CHECK(compare_tables(expected, extra, by_name).ok());

  Table fewer = small_table({{"a", 1.5, 1}, {"b", 2.0, 2}});
  CHECK_FALSE(compare_tables(expected, fewer).ok());

  Table other_header("t", {"name", "val", "count"});
  other_header.rows = good.rows;
  auto h = compare_tables(expected, other_header);
  CHECK_FALSE(h.header_equal);
  CHECK_FALSE(h.ok());
  jarvis::golden::Options ignore;
  ignore.ignore_columns = {"value", "val"};
  CHECK(compare_tables(expected, other_header, ignore).ok());
}

TEST_CASE("golden harness: conformance dirs are found") {
  auto dirs = jarvis::golden::conformance_dirs();
  CHECK(dirs.size() >= 7);
  for (const auto& d : dirs) CHECK(d.find("compare_") == std::string::npos);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
