#include "report/pandas_roundtrip.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "pycompat/pandas_csv.h"

namespace jarvis {

namespace {

// A copy of `t` with every cell as the text DataFrame.to_csv writes for it
// (float columns decided on the whole table, as a DataFrame column dtype is).
Table as_csv_text(const Table& t) {
  Table out(t.name, t.columns);
  std::vector<bool> as_float(t.columns.size());
  for (size_t c = 0; c < t.columns.size(); ++c) as_float[c] = t.column_is_float(c);
  for (const auto& row : t.rows) {
    auto& dst = out.add_row();
    for (size_t c = 0; c < row.size() && c < dst.size(); ++c) {
      if (row[c].missing()) continue;
      if (row[c].is_text())
        dst[c] = row[c];
      else
        dst[c] = Cell(row[c].to_csv_text(as_float[c]));
    }
  }
  return out;
}

enum class ColType { Int, Float, Bool, Text };

// read_csv's dtype of one column of CSV text cells.
ColType infer_column(const Table& t, size_t c) {
  bool all_int = true, all_num = true, all_bool = true, any_na = false, any_value = false;
  for (const auto& row : t.rows) {
    const Cell& cell = row[c];
    if (cell.missing() || pycompat::pandas_is_na_text(cell.text())) {
      any_na = true;
      continue;
    }
    const std::string& s = cell.text();
    any_value = true;
    int64_t i;
    double d;
    if (!pycompat::pandas_parse_int(s, i)) all_int = false;
    if (!all_int && !pycompat::pandas_parse_float(s, d)) all_num = false;
    if (!pycompat::pandas_is_true_text(s) && !pycompat::pandas_is_false_text(s)) all_bool = false;
  }
  if (!any_value) return ColType::Float;  // all-NaN column
  if (all_int) return any_na ? ColType::Float : ColType::Int;
  if (all_num) return ColType::Float;
  if (all_bool) return ColType::Bool;
  return ColType::Text;
}

// Types the text cells of `text` the way read_csv infers column dtypes (the
// result has one header row: column_level2 is not carried).
Table read_csv_types(const Table& text) {
  Table out(text.name, text.columns);
  out.rows.assign(text.rows.size(), std::vector<Cell>(text.columns.size()));
  for (size_t c = 0; c < text.columns.size(); ++c) {
    ColType type = infer_column(text, c);
    for (size_t r = 0; r < text.rows.size(); ++r) {
      const Cell& in = text.rows[r][c];
      Cell& cell = out.rows[r][c];
      if (in.missing() || pycompat::pandas_is_na_text(in.text())) {
        cell = type == ColType::Float ? Cell(std::numeric_limits<double>::quiet_NaN()) : Cell();
        continue;
      }
      const std::string& s = in.text();
      switch (type) {
        case ColType::Int: {
          int64_t i = 0;
          pycompat::pandas_parse_int(s, i);
          cell = Cell(i);
          break;
        }
        case ColType::Float: {
          double d = 0;
          int64_t i = 0;
          if (pycompat::pandas_parse_int(s, i))
            d = static_cast<double>(i);
          else
            pycompat::pandas_parse_float(s, d);
          cell = Cell(d);
          break;
        }
        case ColType::Bool:
          cell = Cell(pycompat::pandas_is_true_text(s));
          break;
        case ColType::Text:
          cell = Cell(s);
          break;
      }
    }
  }
  return out;
}

}  // namespace

Table pandas_roundtrip(const Table& table) {
  return read_csv_types(as_csv_text(table));
}

Table read_csv_typed(const std::string& path) {
  return pandas_roundtrip(read_csv_file(path));
}

}  // namespace jarvis
