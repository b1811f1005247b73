#include "categories/category_analysis_common.h"

#include "perf/perf_model.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "pycompat/json.h"
#include "pycompat/text.h"

namespace jarvis::analysis {

bool is_na(const Cell& c) {
  return c.missing() || (c.is_double() && std::isnan(c.number()));
}

const Cell* cell_at(const Table& table, size_t row, std::string_view column) {
  int c = table.col(column);
  if (c < 0 || row >= table.rows.size()) return nullptr;
  return &table.rows[row][static_cast<size_t>(c)];
}

double cell_number(const Cell* c) {
  if (!c) return std::numeric_limits<double>::quiet_NaN();
  if (c->is_bool()) return c->is_bool() && std::get<bool>(c->v) ? 1.0 : 0.0;
  return c->number();
}

std::string cell_text(const Cell* c) {
  return c && c->is_text() ? c->text() : std::string();
}

ojson cell_to_json(const Cell& c) {
  if (c.missing()) return nullptr;
  if (c.is_int()) return std::get<int64_t>(c.v);
  if (c.is_double()) return std::get<double>(c.v);
  if (c.is_bool()) return std::get<bool>(c.v);
  return c.text();
}

std::vector<double> column_numbers(const Table& table, std::string_view column) {
  std::vector<double> out;
  int c = table.col(column);
  if (c < 0) return out;
  for (const auto& row : table.rows) out.push_back(cell_number(&row[static_cast<size_t>(c)]));
  return out;
}

// ---------------------------------------------------------------------------
// JSON files: json.dump(indent=2) out, json.load (NaN / Infinity accepted) in
// ---------------------------------------------------------------------------

namespace {

// Replaces bare NaN / Infinity tokens (outside strings) by null.
std::string neutralize_non_json_numbers(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_str = false;
  for (size_t k = 0; k < text.size(); ++k) {
    char c = text[k];
    if (in_str) {
      out += c;
      if (c == '\\' && k + 1 < text.size())
        out += text[++k];
      else if (c == '"')
        in_str = false;
      continue;
    }
    if (c == '"') {
      in_str = true;
      out += c;
    } else if (text.compare(k, 3, "NaN") == 0) {
      out += "null";
      k += 2;
    } else if (text.compare(k, 9, "-Infinity") == 0) {
      out += "null";
      k += 8;
    } else if (text.compare(k, 8, "Infinity") == 0) {
      out += "null";
      k += 7;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

void write_json_atomic(const std::string& path, const ojson& value) {
  write_file_atomic(path, pycompat::py_json_dumps(value));
}

ojson read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  try {
    return ojson::parse(text);
  } catch (const nlohmann::json::parse_error&) {
  }
  try {
    return ojson::parse(neutralize_non_json_numbers(text));
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(path + ": invalid JSON: " + e.what());
  }
}

// ---------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------

std::pair<std::string, std::string> normalize_category(const Cell* op_category) {
  if (!op_category || is_na(*op_category)) return {"other", "Other"};
  std::string display =
      op_category->is_text() ? op_category->text() : op_category->to_csv_text(false);
  if (display.empty()) return {"other", "Other"};
  std::string key = pycompat::ascii_lower(display);
  std::replace(key.begin(), key.end(), ' ', '_');
  std::replace(key.begin(), key.end(), '/', '_');
  return {key, display};
}

// TraceLens's torch_dtype_map, shared with the perf models.
std::string torch_dtype_precision(std::string_view dtype) {
  return perf::precision_of(dtype);
}

bool is_valid_category_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

}  // namespace jarvis::analysis
