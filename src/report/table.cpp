#include "report/table.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "base/utf8.h"
#include "pycompat/repr.h"
#include "pycompat/value.h"

namespace jarvis {

double Cell::number() const {
  if (is_int()) return static_cast<double>(std::get<int64_t>(v));
  if (is_double()) return std::get<double>(v);
  return std::numeric_limits<double>::quiet_NaN();
}

std::string Cell::to_csv_text(bool as_float) const {
  if (missing()) return "";
  if (is_int()) {
    auto x = std::get<int64_t>(v);
    return as_float ? pycompat::py_float_repr(static_cast<double>(x)) : std::to_string(x);
  }
  if (is_double()) {
    double d = std::get<double>(v);
    return std::isnan(d) ? "" : pycompat::py_float_repr(d);
  }
  if (is_bool()) return std::get<bool>(v) ? "True" : "False";
  return std::get<std::string>(v);
}

int Table::col(std::string_view column) const {
  for (size_t k = 0; k < columns.size(); ++k)
    if (columns[k] == column) return static_cast<int>(k);
  return -1;
}

Table Table::select_columns(const std::vector<size_t>& order) const {
  Table out(name, {});
  out.columns.reserve(order.size());
  for (size_t c : order) out.columns.push_back(columns.at(c));
  if (!column_level2.empty())
    for (size_t c : order) out.column_level2.push_back(column_level2.at(c));
  out.rows.reserve(rows.size());
  for (const auto& row : rows) {
    auto& dst = out.add_row();
    for (size_t k = 0; k < order.size(); ++k) dst[k] = row[order[k]];
  }
  return out;
}

std::vector<Cell>& Table::add_row() {
  rows.emplace_back(columns.size());
  return rows.back();
}

Cell& Table::at(size_t row, std::string_view column) {
  int c = col(column);
  if (c < 0) throw std::out_of_range("no column " + std::string(column));
  return rows[row][static_cast<size_t>(c)];
}

const Cell& Table::at(size_t row, std::string_view column) const {
  int c = col(column);
  if (c < 0) throw std::out_of_range("no column " + std::string(column));
  return rows[row][static_cast<size_t>(c)];
}

bool Table::column_is_float(size_t c) const {
  bool has_int = false, has_missing = false;
  for (const auto& row : rows) {
    const Cell& cell = row[c];
    if (cell.is_double()) return true;
    if (cell.is_int()) has_int = true;
    if (cell.missing()) has_missing = true;
    if (cell.is_text() || cell.is_bool()) return false;
  }
  return has_int && has_missing;
}

void append_csv_field(std::string& out, std::string_view field) {
  bool quote = field.find_first_of(",\"\r\n") != std::string_view::npos;
  if (!quote) {
    out += field;
    return;
  }
  out += '"';
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

std::string Table::to_csv() const {
  std::string out;
  for (size_t c = 0; c < columns.size(); ++c) {
    if (c) out += ',';
    append_csv_field(out, columns[c]);
  }
  out += '\n';
  if (!column_level2.empty()) {
    for (size_t c = 0; c < column_level2.size(); ++c) {
      if (c) out += ',';
      append_csv_field(out, column_level2[c]);
    }
    out += '\n';
  }
  std::vector<bool> as_float(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) as_float[c] = column_is_float(c);
  for (const auto& row : rows) {
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c) out += ',';
      append_csv_field(out, row[c].to_csv_text(as_float[c]));
    }
    out += '\n';
  }
  return out;
}

Table parse_csv(std::string_view text, std::string name) {
  // A CSV file given to jarvis (rocprofv3 output, a report to compare, a
  // kernel list) is not promised to be UTF-8; every output is (JSON, XML,
  // CSV): each bad byte becomes U+FFFD here, once, at ingest.
  std::string repaired;
  if (!is_valid_utf8(text)) text = repaired = valid_utf8(text);
  Table table;
  table.name = std::move(name);
  std::vector<std::string> record;
  std::string field;
  bool in_quotes = false, field_started = false;
  bool header_done = false;
  auto end_record = [&] {
    record.push_back(std::move(field));
    field.clear();
    if (!header_done) {
      table.columns = std::move(record);
      header_done = true;
    } else {
      auto& row = table.rows.emplace_back();
      for (auto& f : record) row.emplace_back(f.empty() ? Cell() : Cell(std::move(f)));
      row.resize(table.columns.size());
    }
    record.clear();
    field_started = false;
  };
  for (size_t k = 0; k < text.size(); ++k) {
    char c = text[k];
    if (in_quotes) {
      if (c == '"') {
        if (k + 1 < text.size() && text[k + 1] == '"') {
          field += '"';
          ++k;
        } else {
          in_quotes = false;
        }
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"') {
      in_quotes = true;
      field_started = true;
    } else if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
      field_started = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && k + 1 < text.size() && text[k + 1] == '\n') ++k;
      if (field_started || !field.empty() || !record.empty()) end_record();
    } else {
      field += c;
      field_started = true;
    }
  }
  if (field_started || !field.empty() || !record.empty()) end_record();
  return table;
}

Table read_csv_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  auto stem = std::filesystem::path(path).stem().string();
  return parse_csv(ss.str(), stem);
}

}  // namespace jarvis
