#include "compare/compare_frame.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "pycompat/pandas_csv.h"
#include "pycompat/repr.h"
#include "pycompat/value.h"
#include "report/numpy_sort.h"

namespace jarvis::frame {

namespace {

// A float cell as read_excel (openpyxl: Python's float()) reads it, correctly
// rounded; no hex, no padding.
bool parse_float(const std::string& s, double& out) {
  if (s.find_first_of("xX \t") != std::string::npos) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end != s.c_str() && !*end;
}

// 1 for pandas' true texts, 0 for its false texts, -1 otherwise.
int bool_value(const std::string& s) {
  if (pycompat::pandas_is_true_text(s)) return 1;
  if (pycompat::pandas_is_false_text(s)) return 0;
  return -1;
}

void type_column(Table& table, size_t c) {
  bool all_int = true, all_float = true, all_bool = true;
  for (auto& row : table.rows) {
    Cell& cell = row[c];
    if (!cell.is_text()) continue;
    if (pycompat::pandas1_is_na_text(cell.text())) {
      cell = Cell();
      continue;
    }
    int64_t i;
    double d;
    if (all_int && !pycompat::pandas_parse_int(cell.text(), i)) all_int = false;
    if (all_float && !parse_float(cell.text(), d)) all_float = false;
    if (all_bool && bool_value(cell.text()) < 0) all_bool = false;
  }
  if (!all_int && !all_float && !all_bool) return;
  for (auto& row : table.rows) {
    Cell& cell = row[c];
    if (!cell.is_text()) continue;
    int64_t i = 0;
    double d = 0;
    if (all_int && pycompat::pandas_parse_int(cell.text(), i)) {
      cell = Cell(i);
    } else if (all_float && parse_float(cell.text(), d)) {
      cell = Cell(d);
    } else if (all_bool) {
      cell = Cell(bool_value(cell.text()) == 1);
    }
  }
}

// Canonical text of a key cell: equal keys (in the pandas merge sense) have
// equal texts. Numbers compare by value, so 1 and 1.0 share one spelling.
void append_key_text(std::string& out, const Cell& cell) {
  if (cell.missing() || (cell.is_double() && std::isnan(cell.number()))) {
    out += "M;";
    return;
  }
  std::string body;
  char kind;
  if (cell.is_number()) {
    kind = 'N';
    double d = cell.number();
    if (cell.is_int()) {
      body = std::to_string(std::get<int64_t>(cell.v));
    } else if (d == std::floor(d) && std::fabs(d) < 9.0e15) {
      body = std::to_string(static_cast<int64_t>(d));
    } else {
      body = pycompat::py_float_repr(d);
    }
  } else if (cell.is_bool()) {
    kind = 'B';
    body.assign(1, std::get<bool>(cell.v) ? '1' : '0');
  } else {
    kind = 'S';
    body = cell.text();
  }
  out += kind;
  out += std::to_string(body.size());
  out += ':';
  out += body;
}

bool cell_is_missing(const Cell& cell) {
  return cell.missing() || (cell.is_double() && std::isnan(cell.number()));
}

// Lexicographic order of key cells: numbers by value, then bools, then text
// (bytewise), missing last.
int compare_key_cells(const Cell& a, const Cell& b) {
  auto rank = [](const Cell& c) {
    if (cell_is_missing(c)) return 3;
    if (c.is_number()) return 0;
    if (c.is_bool()) return 1;
    return 2;
  };
  int ra = rank(a), rb = rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  if (ra == 0) {
    double x = a.number(), y = b.number();
    return x < y ? -1 : (y < x ? 1 : 0);
  }
  if (ra == 1) return static_cast<int>(std::get<bool>(a.v)) - static_cast<int>(std::get<bool>(b.v));
  if (ra == 2) return a.text().compare(b.text()) < 0 ? -1 : (a.text() == b.text() ? 0 : 1);
  return 0;
}

std::vector<size_t> key_positions(const Table& table, const std::vector<std::string>& keys,
                                  const char* side) {
  std::vector<size_t> pos;
  for (const auto& k : keys) {
    int c = table.col(k);
    if (c < 0)
      throw std::runtime_error("merge key column '" + k + "' missing from the " + side +
                               " table '" + table.name + "'");
    pos.push_back(static_cast<size_t>(c));
  }
  return pos;
}

// One distinct key of the merge with the rows holding it on each side.
struct KeyGroup {
  std::vector<size_t> left_rows, right_rows;
  const std::vector<Cell>* first_row = nullptr;  // a row holding the key (for sorting)
  const std::vector<size_t>* first_pos = nullptr;
};

}  // namespace

void infer_column_types(Table& table) {
  for (size_t c = 0; c < table.columns.size(); ++c) type_column(table, c);
  materialize_float_columns(table);
}

void materialize_float_columns(Table& table) {
  for (size_t c = 0; c < table.columns.size(); ++c) {
    for (auto& row : table.rows)
      if (row[c].is_double() && std::isnan(row[c].number())) row[c] = Cell();
    if (!table.column_is_float(c)) continue;
    for (auto& row : table.rows)
      if (row[c].is_int()) row[c] = Cell(row[c].number());
  }
}

Table outer_merge(const Table& left, const Table& right, const std::vector<std::string>& keys,
                  MergeOrder order) {
  auto lpos = key_positions(left, keys, "left");
  auto rpos = key_positions(right, keys, "right");

  // Output columns: keys, left non-keys, right non-keys.
  Table out;
  out.name = left.name;
  out.columns = keys;
  std::vector<size_t> left_data, right_data;
  for (size_t c = 0; c < left.columns.size(); ++c)
    if (std::find(lpos.begin(), lpos.end(), c) == lpos.end()) {
      left_data.push_back(c);
      out.columns.push_back(left.columns[c]);
    }
  for (size_t c = 0; c < right.columns.size(); ++c)
    if (std::find(rpos.begin(), rpos.end(), c) == rpos.end()) {
      if (out.col(right.columns[c]) >= 0)
        throw std::runtime_error("column '" + right.columns[c] + "' is in both merged tables");
      right_data.push_back(c);
      out.columns.push_back(right.columns[c]);
    }

  // Group rows by key, numbering keys by first appearance (left, then right).
  std::vector<KeyGroup> groups;
  std::unordered_map<std::string, size_t> index;
  auto group_of = [&](const std::vector<Cell>& row, const std::vector<size_t>& pos) -> KeyGroup& {
    std::string text;
    for (size_t p : pos) append_key_text(text, row[p]);
    auto [it, inserted] = index.emplace(std::move(text), groups.size());
    if (inserted) {
      groups.emplace_back();
      groups.back().first_row = &row;
      groups.back().first_pos = &pos;
    }
    return groups[it->second];
  };
  for (size_t r = 0; r < left.rows.size(); ++r) group_of(left.rows[r], lpos).left_rows.push_back(r);
  for (size_t r = 0; r < right.rows.size(); ++r)
    group_of(right.rows[r], rpos).right_rows.push_back(r);

  std::vector<size_t> group_order(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) group_order[g] = g;
  if (order == MergeOrder::Lexicographic) {
    std::stable_sort(group_order.begin(), group_order.end(), [&](size_t a, size_t b) {
      const KeyGroup &ga = groups[a], &gb = groups[b];
      for (size_t k = 0; k < keys.size(); ++k) {
        int c = compare_key_cells((*ga.first_row)[(*ga.first_pos)[k]],
                                  (*gb.first_row)[(*gb.first_pos)[k]]);
        if (c) return c < 0;
      }
      return false;
    });
  }

  auto emit = [&](const std::vector<Cell>* lrow, const std::vector<Cell>* rrow) {
    auto& row = out.add_row();
    for (size_t k = 0; k < keys.size(); ++k) row[k] = lrow ? (*lrow)[lpos[k]] : (*rrow)[rpos[k]];
    size_t c = keys.size();
    for (size_t src : left_data) row[c++] = lrow ? (*lrow)[src] : Cell();
    for (size_t src : right_data) row[c++] = rrow ? (*rrow)[src] : Cell();
  };
  for (size_t g : group_order) {
    const KeyGroup& group = groups[g];
    if (group.right_rows.empty()) {
      for (size_t l : group.left_rows) emit(&left.rows[l], nullptr);
    } else if (group.left_rows.empty()) {
      for (size_t r : group.right_rows) emit(nullptr, &right.rows[r]);
    } else {
      for (size_t l : group.left_rows)
        for (size_t r : group.right_rows) emit(&left.rows[l], &right.rows[r]);
    }
  }
  materialize_float_columns(out);
  return out;
}

std::vector<size_t> argsort_descending(const std::vector<double>& values) {
  return numpy::argsort_descending(values);
}

std::vector<double> numeric_column(const Table& table, size_t column) {
  std::vector<double> out;
  out.reserve(table.rows.size());
  for (const auto& row : table.rows)
    out.push_back(row[column].is_number() ? row[column].number()
                                          : std::numeric_limits<double>::quiet_NaN());
  return out;
}

Table take_rows(const Table& table, const std::vector<size_t>& order) {
  Table out(table.name, table.columns);
  out.rows.reserve(order.size());
  for (size_t r : order) out.rows.push_back(table.rows[r]);
  return out;
}

void drop_all_missing_columns(Table& table) {
  std::vector<size_t> keep;
  for (size_t c = 0; c < table.columns.size(); ++c) {
    bool any = false;
    for (const auto& row : table.rows)
      if (!cell_is_missing(row[c])) {
        any = true;
        break;
      }
    if (any) keep.push_back(c);
  }
  table = table.select_columns(keep);
}

}  // namespace jarvis::frame
