// Table: the column-ordered result every report sheet is built into, and the
// pandas-compatible CSV writer / reader for it.
//
// Cells mirror what a pandas DataFrame holds after TraceLens builds a sheet:
// missing (NaN/None), int, float, bool or text (text already rendered, e.g. a
// Python tuple repr). Writing follows DataFrame.to_csv(index=False).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/atomic_file.h"  // write_file_atomic, used by every table writer

namespace jarvis {

struct Cell {
  std::variant<std::monostate, int64_t, double, bool, std::string> v;

  Cell() = default;
  Cell(int64_t x) : v(x) {}
  Cell(int x) : v(static_cast<int64_t>(x)) {}
  Cell(uint32_t x) : v(static_cast<int64_t>(x)) {}
  Cell(size_t x) : v(static_cast<int64_t>(x)) {}
  Cell(double x) : v(x) {}
  Cell(bool x) : v(x) {}
  Cell(std::string x) : v(std::move(x)) {}
  Cell(const char* x) : v(std::string(x)) {}

  bool missing() const { return std::holds_alternative<std::monostate>(v); }
  bool is_int() const { return std::holds_alternative<int64_t>(v); }
  bool is_double() const { return std::holds_alternative<double>(v); }
  bool is_text() const { return std::holds_alternative<std::string>(v); }
  bool is_bool() const { return std::holds_alternative<bool>(v); }
  bool is_number() const { return is_int() || is_double(); }
  double number() const;  // int or double as double; NaN otherwise
  const std::string& text() const { return std::get<std::string>(v); }
  // The text pandas writes for this cell (float columns are handled by Table).
  std::string to_csv_text(bool as_float) const;
};

class Table {
 public:
  std::string name;  // sheet name, e.g. "ops_summary"
  std::vector<std::string> columns;
  // Second header row, one entry per column, or empty: pandas writes the two
  // levels of a MultiIndex column header (e.g. ("Kernel duration (µs)",
  // "sum") of an aggregation whose flattening TraceLens skipped) as two rows.
  std::vector<std::string> column_level2;
  std::vector<std::vector<Cell>> rows;

  Table() = default;
  Table(std::string n, std::vector<std::string> cols)
      : name(std::move(n)), columns(std::move(cols)) {}

  // Index of a column, or -1.
  int col(std::string_view column) const;
  // Appends a row of missing cells and returns it.
  std::vector<Cell>& add_row();
  Cell& at(size_t row, std::string_view column);
  const Cell& at(size_t row, std::string_view column) const;

  // pandas promotes an int column holding missing values to float (220.0);
  // a column is written as float when any cell is a double, or when it has
  // ints and missing cells.
  bool column_is_float(size_t c) const;

  // A copy holding only the columns at `order`, in that order (an index may
  // repeat; each must be < columns.size()), with their second header row
  // entries when the table has that row.
  Table select_columns(const std::vector<size_t>& order) const;

  std::string to_csv() const;
};

// Appends one CSV field as Table::to_csv writes it: quoted (quotes doubled)
// when it holds a comma, a quote or a line break, else as it is.
void append_csv_field(std::string& out, std::string_view field);

// Parses CSV text (RFC 4180 quoting, as pandas writes it) into a table of
// text cells; empty fields become missing cells. Text that is not valid
// UTF-8 gets U+FFFD for each bad byte.
Table parse_csv(std::string_view text, std::string name = "");
Table read_csv_file(const std::string& path);

}  // namespace jarvis
