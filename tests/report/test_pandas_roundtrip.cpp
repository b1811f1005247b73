// report/pandas_roundtrip: the one CSV text round trip (a typed Table as
// pandas.read_csv types the CSV DataFrame.to_csv wrote for it). Expected
// dtypes / values are what pandas 2 gives for the same CSV text, worked out
// by hand per column below.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "report/pandas_roundtrip.h"
#include "report/table.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;

namespace {

Table typed_sample() {
  Table t("sample", {"ints", "ints_with_na", "floats", "bools", "text", "all_na"});
  auto& a = t.add_row();
  a[0] = Cell(int64_t{1});
  a[1] = Cell(int64_t{220});
  a[2] = Cell(0.1);
  a[3] = Cell(true);
  a[4] = Cell("gemm");
  auto& b = t.add_row();
  b[0] = Cell(int64_t{-7});
  // b[1] missing: the int column is written as float ("220.0", "", "5.0")
  b[2] = Cell(2.0);
  b[3] = Cell(false);
  b[4] = Cell("");  // an empty string is written as a blank field
  auto& c = t.add_row();
  c[0] = Cell(int64_t{9007199254740993});  // beyond 2^53: stays exact as int64
  c[1] = Cell(int64_t{5});
  c[2] = Cell(std::nan(""));  // NaN is written as a blank field
  c[3] = Cell(true);
  c[4] = Cell("None");  // one of read_csv's NA strings
  return t;
}

bool is_nan(const Cell& c) {
  return c.is_double() && std::isnan(c.number());
}

}  // namespace

TEST_CASE("pandas_roundtrip: read_csv's dtypes of the CSV to_csv writes") {
  Table t = pandas_roundtrip(typed_sample());
  REQUIRE(t.rows.size() == 3);
  REQUIRE(t.columns.size() == 6);
  // int64 column, no blanks: ints, exact beyond 2^53
  CHECK(std::get<int64_t>(t.rows[0][0].v) == 1);
  CHECK(std::get<int64_t>(t.rows[1][0].v) == -7);
  CHECK(std::get<int64_t>(t.rows[2][0].v) == 9007199254740993);
  // ints with a blank: float64 with NaN
  CHECK(t.rows[0][1].is_double());
  CHECK(t.rows[0][1].number() == 220.0);
  CHECK(is_nan(t.rows[1][1]));
  CHECK(t.rows[2][1].number() == 5.0);
  // floats: 2.0 stays a double, NaN comes back NaN
  CHECK(t.rows[0][2].number() == 0.1);
  CHECK(t.rows[1][2].is_double());
  CHECK(t.rows[1][2].number() == 2.0);
  CHECK(is_nan(t.rows[2][2]));
  // True/False column: bool
  CHECK(std::get<bool>(t.rows[0][3].v) == true);
  CHECK(std::get<bool>(t.rows[1][3].v) == false);
  // object column: blank and "None" are NaN (missing cells)
  CHECK(t.rows[0][4].text() == "gemm");
  CHECK(t.rows[1][4].missing());
  CHECK(t.rows[2][4].missing());
  // a column of blanks only is float64 NaN
  for (size_t r = 0; r < 3; ++r) CHECK(is_nan(t.rows[r][5]));
}

TEST_CASE("pandas_roundtrip: same as typing the CSV text, and as read_csv_typed of the file") {
  Table typed = typed_sample();
  std::string csv = typed.to_csv();
  CHECK(csv ==
        "ints,ints_with_na,floats,bools,text,all_na\n"
        "1,220.0,0.1,True,gemm,\n"
        "-7,,2.0,False,,\n"
        "9007199254740993,5.0,,True,None,\n");
  Table direct = pandas_roundtrip(typed);
  Table via_text = pandas_roundtrip(parse_csv(csv, "sample"));
  REQUIRE(direct.columns == via_text.columns);
  REQUIRE(direct.rows.size() == via_text.rows.size());
  for (size_t r = 0; r < direct.rows.size(); ++r)
    for (size_t c = 0; c < direct.columns.size(); ++c) {
      const Cell& x = direct.rows[r][c];
      const Cell& y = via_text.rows[r][c];
      std::string where = direct.columns[c] + " row " + std::to_string(r);
      CAPTURE(where);
      CHECK(x.v.index() == y.v.index());
      CHECK(x.to_csv_text(false) == y.to_csv_text(false));
    }
  // Typing is idempotent: a round-tripped table round-trips to itself.
  CHECK(pandas_roundtrip(direct).to_csv() == direct.to_csv());
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
