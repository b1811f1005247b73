#include "report/xlsx.h"

#include "base/atomic_file.h"
#include "pycompat/text.h"

#include <unistd.h>
#include <xlsxwriter.h>

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>
#include <stdexcept>

namespace jarvis {

namespace {

constexpr size_t kMaxSheetName = 31;    // Excel's limit, in characters
constexpr size_t kMaxCellText = 32767;  // Excel's limit per cell
constexpr size_t kMaxRows = 1048576;    // including the header row
constexpr size_t kMaxColumns = 16384;
constexpr size_t kWidthSampleRows = 2000;  // rows looked at to size columns

// Number of UTF-8 code points in s.
size_t utf8_length(std::string_view s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// Longest prefix of s with at most max_chars code points.
std::string utf8_prefix(std::string_view s, size_t max_chars) {
  size_t chars = 0;
  for (size_t k = 0; k < s.size(); ++k) {
    bool starts_char = (static_cast<unsigned char>(s[k]) & 0xC0) != 0x80;
    if (starts_char && chars++ == max_chars) return std::string(s.substr(0, k));
  }
  return std::string(s);
}

std::string valid_sheet_name(const std::string& name) {
  std::string s;
  for (char c : name) s += std::string_view("[]:*?/\\").find(c) == std::string_view::npos ? c : '_';
  // Excel rejects names that start or end with an apostrophe.
  while (!s.empty() && s.front() == '\'') s.erase(s.begin());
  while (!s.empty() && s.back() == '\'') s.pop_back();
  if (s.empty()) s = "Sheet";
  return utf8_prefix(s, kMaxSheetName);
}

// Cell text as shown in the sheet: the same rendering as the CSV output.
std::string cell_text(const Cell& cell) {
  return cell.to_csv_text(false);
}

double column_width(const Table& t, size_t c) {
  size_t widest = utf8_length(t.columns[c]);
  size_t rows = std::min(t.rows.size(), kWidthSampleRows);
  for (size_t r = 0; r < rows; ++r)
    if (c < t.rows[r].size()) widest = std::max(widest, utf8_length(cell_text(t.rows[r][c])));
  return static_cast<double>(std::clamp<size_t>(widest + 2, 8, 60));
}

class Workbook {
 public:
  Workbook(const std::string& tmp_path, const std::string& final_path) : final_path_(final_path) {
    lxw_workbook_options options{};
    options.constant_memory = LXW_TRUE;  // rows are streamed to disk as written
    wb_ = workbook_new_opt(tmp_path.c_str(), &options);
    if (!wb_) throw std::runtime_error(fmt::format("{}: cannot create workbook", final_path));
    bold_ = workbook_add_format(wb_);
    format_set_bold(bold_);
  }
  ~Workbook() {
    if (wb_) workbook_close(wb_);  // only reached on error paths
  }

  void add_table(const Table& t, const std::string& sheet_name) {
    if (t.rows.size() + 1 > kMaxRows || t.columns.size() > kMaxColumns)
      throw std::runtime_error(
          fmt::format("{}: table '{}' has {} rows x {} columns, more than an Excel sheet holds",
                      final_path_, t.name, t.rows.size(), t.columns.size()));
    lxw_worksheet* ws = workbook_add_worksheet(wb_, sheet_name.c_str());
    if (!ws)
      throw std::runtime_error(
          fmt::format("{}: cannot add sheet '{}' for table '{}'", final_path_, sheet_name, t.name));
    // Widths and panes are set before any row is streamed out.
    for (size_t c = 0; c < t.columns.size(); ++c) {
      auto col = static_cast<lxw_col_t>(c);
      check(worksheet_set_column(ws, col, col, column_width(t, c), nullptr), t);
    }
    worksheet_freeze_panes(ws, t.column_level2.empty() ? 1 : 2, 0);
    for (size_t c = 0; c < t.columns.size(); ++c)
      check(worksheet_write_string(ws, 0, static_cast<lxw_col_t>(c), t.columns[c].c_str(), bold_),
            t);
    // A second header level gets its own row (pandas refuses to write such a
    // sheet to Excel without an index; jarvis writes it as the CSV has it).
    lxw_row_t first = 1;
    if (!t.column_level2.empty()) {
      for (size_t c = 0; c < t.column_level2.size(); ++c)
        check(worksheet_write_string(ws, 1, static_cast<lxw_col_t>(c), t.column_level2[c].c_str(),
                                     bold_),
              t);
      first = 2;
    }
    for (size_t r = 0; r < t.rows.size(); ++r)
      for (size_t c = 0; c < t.rows[r].size() && c < t.columns.size(); ++c)
        write_cell(ws, static_cast<lxw_row_t>(r + first), static_cast<lxw_col_t>(c), t.rows[r][c],
                   t);
  }

  void close() {
    lxw_error err = workbook_close(wb_);
    wb_ = nullptr;
    if (err != LXW_NO_ERROR)
      throw std::runtime_error(
          fmt::format("{}: writing the workbook failed: {}", final_path_, lxw_strerror(err)));
  }

 private:
  void write_cell(lxw_worksheet* ws, lxw_row_t row, lxw_col_t col, const Cell& cell,
                  const Table& t) {
    if (cell.missing()) return;
    if (cell.is_number()) {
      double v = cell.number();
      if (std::isfinite(v)) check(worksheet_write_number(ws, row, col, v, nullptr), t);
      return;
    }
    if (cell.is_bool()) {
      check(worksheet_write_boolean(ws, row, col, std::get<bool>(cell.v), nullptr), t);
      return;
    }
    const std::string& text = cell.text();
    if (text.empty()) return;
    if (text.size() <= kMaxCellText) {
      check(worksheet_write_string(ws, row, col, text.c_str(), nullptr), t);
    } else {
      std::string cut = utf8_prefix(text, kMaxCellText);
      check(worksheet_write_string(ws, row, col, cut.c_str(), nullptr), t);
    }
  }

  void check(lxw_error err, const Table& t) {
    if (err != LXW_NO_ERROR)
      throw std::runtime_error(
          fmt::format("{}: writing table '{}' failed: {}", final_path_, t.name, lxw_strerror(err)));
  }

  std::string final_path_;
  lxw_workbook* wb_ = nullptr;
  lxw_format* bold_ = nullptr;
};

}  // namespace

std::vector<std::string> xlsx_sheet_names(const std::vector<Table>& tables) {
  std::vector<std::string> names;
  std::set<std::string> taken;  // lower-cased: Excel names are case-insensitive
  for (const Table& t : tables) {
    std::string base = valid_sheet_name(t.name);
    std::string name = base;
    for (int k = 2; taken.count(pycompat::ascii_lower(name)); ++k) {
      std::string suffix = fmt::format("~{}", k);
      name = utf8_prefix(base, kMaxSheetName - suffix.size()) + suffix;
    }
    taken.insert(pycompat::ascii_lower(name));
    names.push_back(name);
  }
  return names;
}

void write_xlsx(const std::vector<Table>& tables, const std::string& path) {
  namespace fs = std::filesystem;
  fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  if (ec)
    throw std::runtime_error(fmt::format("{}: cannot create directory: {}", path, ec.message()));
  AtomicFile file(target);  // a temp of this writer's own, removed unless committed
  std::vector<std::string> names = xlsx_sheet_names(tables);
  Workbook wb(file.temp_path(), path);
  for (size_t k = 0; k < tables.size(); ++k) wb.add_table(tables[k], names[k]);
  wb.close();
  file.commit();
}

}  // namespace jarvis
