// Table::select_columns, which compare uses to drop, keep and reorder
// columns: cells follow their columns, the second header row too.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "report/table.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::Cell;
using jarvis::Table;

namespace {

Table three_by_two() {
  Table t("sheet", {"a", "b", "c"});
  auto& r0 = t.add_row();
  r0[0] = Cell(1);
  r0[1] = Cell(std::string("x"));
  r0[2] = Cell(2.5);
  auto& r1 = t.add_row();
  r1[0] = Cell(3);
  r1[2] = Cell(4.5);  // r1[1] stays missing
  return t;
}

}  // namespace

TEST_CASE("Table::select_columns: reorders, drops and repeats columns with their cells") {
  Table t = three_by_two();
  Table s = t.select_columns({2, 0});
  CHECK(s.name == "sheet");
  CHECK(s.columns == std::vector<std::string>{"c", "a"});
  CHECK(s.column_level2.empty());
  REQUIRE(s.rows.size() == 2);
  CHECK(s.rows[0][0].number() == 2.5);
  CHECK(s.rows[0][1].number() == 1);
  CHECK(s.rows[1][0].number() == 4.5);
  CHECK(s.rows[1][1].number() == 3);

  Table twice = t.select_columns({1, 1});
  CHECK(twice.columns == std::vector<std::string>{"b", "b"});
  CHECK(twice.rows[0][1].text() == "x");
  CHECK(twice.rows[1][0].missing());

  Table none = t.select_columns({});
  CHECK(none.columns.empty());
  CHECK(none.rows.size() == 2);  // the rows stay, without cells
  CHECK(none.rows[0].empty());
}

TEST_CASE("Table::select_columns: the second header row follows; a bad index throws") {
  Table t = three_by_two();
  t.column_level2 = {"sum", "count", "mean"};
  Table s = t.select_columns({2, 1});
  CHECK(s.column_level2 == std::vector<std::string>{"mean", "count"});
  CHECK_THROWS_AS(t.select_columns({3}), std::out_of_range);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
