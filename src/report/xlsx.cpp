#include "report/xlsx.h"

#include "base/atomic_file.h"
#include "base/module_loader.h"
#include "pycompat/text.h"
#include "report/xlsx_workbook.h"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <memory>
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

XlsxCell xlsx_cell(const Cell& cell, std::vector<std::string>& cut) {
  XlsxCell out;
  if (cell.missing()) return out;
  if (cell.is_number()) {
    double v = cell.number();
    if (std::isfinite(v)) {
      out.kind = XlsxCell::Kind::Number;
      out.number = v;
    }
    return out;
  }
  if (cell.is_bool()) {
    out.kind = XlsxCell::Kind::Bool;
    out.number = std::get<bool>(cell.v) ? 1 : 0;
    return out;
  }
  const std::string& text = cell.text();
  if (text.empty()) return out;
  out.kind = XlsxCell::Kind::Text;
  if (text.size() <= kMaxCellText) {
    out.text = text.c_str();
  } else {
    cut.push_back(utf8_prefix(text, kMaxCellText));
    out.text = cut.back().c_str();
  }
  return out;
}

XlsxModuleEntry workbook_entry() {
  return reinterpret_cast<XlsxModuleEntry>(
      load_module_entry("libjarvis_xlsx.so", kXlsxModuleEntry));
}

// Up to this many cells, and this much text, a workbook keeps its cells in
// memory until it is closed (libxlsxwriter: ~100 bytes a cell, each distinct
// text once, so at most ~18 MB): each distinct text is written once, as
// Excel's shared strings, where streamed rows repeat it in every cell. The
// report of a 16 MB GPT-2 trace (13,000 cells) wrote 711 KB of sheet XML
// instead of 982 KB, and the workbook took 0.045 s instead of 0.065 s, most
// of it zlib's deflate. Larger workbooks stream their rows.
constexpr size_t kCellsInMemory = 100'000;
constexpr size_t kTextBytesInMemory = size_t{8} << 20;

bool cells_fit_in_memory(const std::vector<Table>& tables) {
  size_t cells = 0;
  size_t text_bytes = 0;
  for (const Table& t : tables) {
    cells += (t.rows.size() + 2) * t.columns.size();
    for (const std::vector<Cell>& row : t.rows)
      for (const Cell& cell : row)
        if (cell.is_text()) text_bytes += cell.text().size();
  }
  return cells <= kCellsInMemory && text_bytes <= kTextBytesInMemory;
}

std::unique_ptr<XlsxWorkbook> open_workbook(const std::string& tmp_path,
                                            const std::string& final_path, bool cells_in_memory) {
  return std::unique_ptr<XlsxWorkbook>(workbook_entry()(tmp_path, final_path, cells_in_memory));
}

// One table as a sheet: widths and header rows first, then the rows streamed
// out one at a time (numbers as numbers, NaN/inf and missing cells empty,
// text cut to Excel's limit).
void add_table(XlsxWorkbook& wb, const Table& t, const std::string& sheet_name,
               const std::string& final_path) {
  if (t.rows.size() + 1 > kMaxRows || t.columns.size() > kMaxColumns)
    throw std::runtime_error(
        fmt::format("{}: table '{}' has {} rows x {} columns, more than an Excel sheet holds",
                    final_path, t.name, t.rows.size(), t.columns.size()));
  std::vector<double> widths;
  for (size_t c = 0; c < t.columns.size(); ++c) widths.push_back(column_width(t, c));
  // A second header level gets its own row (pandas refuses to write such a
  // sheet to Excel without an index; jarvis writes it as the CSV has it).
  wb.add_sheet(sheet_name, t.name, widths, t.columns, t.column_level2);
  const auto first = static_cast<uint32_t>(t.column_level2.empty() ? 1 : 2);
  std::vector<XlsxCell> cells;
  std::vector<std::string> cut;  // texts over the limit, shortened
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const std::vector<Cell>& row = t.rows[r];
    size_t n = std::min(row.size(), t.columns.size());
    cells.assign(n, XlsxCell{});
    cut.clear();
    cut.reserve(n);  // stable c_str() pointers while the row is written
    for (size_t c = 0; c < n; ++c) cells[c] = xlsx_cell(row[c], cut);
    wb.write_row(static_cast<uint32_t>(r) + first, cells.data(), n);
  }
}

}  // namespace

void load_xlsx_writer() {
  workbook_entry();
}

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
  std::unique_ptr<XlsxWorkbook> wb =
      open_workbook(file.temp_path(), path, cells_fit_in_memory(tables));
  for (size_t k = 0; k < tables.size(); ++k) add_table(*wb, tables[k], names[k], path);
  wb->close();
  file.commit();
}

}  // namespace jarvis
