// The xlsx module, libjarvis_xlsx.so: XlsxWorkbook (report/xlsx_workbook.h)
// over libxlsxwriter in constant-memory mode (rows streamed to disk as
// written). It uses nothing of the jarvis binary.
#include <fmt/format.h>
#include <xlsxwriter.h>

#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "report/xlsx_workbook.h"

namespace jarvis {
namespace {

class LxwWorkbook final : public XlsxWorkbook {
 public:
  LxwWorkbook(const std::string& tmp_path, const std::string& final_path, bool cells_in_memory)
      : final_path_(final_path) {
    lxw_workbook_options options{};
    options.constant_memory = cells_in_memory ? LXW_FALSE : LXW_TRUE;
    wb_ = workbook_new_opt(tmp_path.c_str(), &options);
    if (!wb_) throw std::runtime_error(fmt::format("{}: cannot create workbook", final_path));
    bold_ = workbook_add_format(wb_);
    format_set_bold(bold_);
  }
  ~LxwWorkbook() override {
    if (wb_) workbook_close(wb_);  // only reached on error paths
  }

  void add_sheet(const std::string& sheet_name, const std::string& table,
                 const std::vector<double>& widths, const std::vector<std::string>& header,
                 const std::vector<std::string>& header2) override {
    table_ = table;
    ws_ = workbook_add_worksheet(wb_, sheet_name.c_str());
    if (!ws_)
      throw std::runtime_error(
          fmt::format("{}: cannot add sheet '{}' for table '{}'", final_path_, sheet_name, table));
    // Widths and panes are set before any row is streamed out.
    for (size_t c = 0; c < widths.size(); ++c) {
      auto col = static_cast<lxw_col_t>(c);
      check(worksheet_set_column(ws_, col, col, widths[c], nullptr));
    }
    worksheet_freeze_panes(ws_, header2.empty() ? 1 : 2, 0);
    write_header(0, header);
    if (!header2.empty()) write_header(1, header2);
  }

  void write_row(uint32_t row, const XlsxCell* cells, size_t count) override {
    for (size_t c = 0; c < count; ++c) {
      const XlsxCell& cell = cells[c];
      auto col = static_cast<lxw_col_t>(c);
      switch (cell.kind) {
        case XlsxCell::Kind::Empty:
          break;
        case XlsxCell::Kind::Number:
          check(worksheet_write_number(ws_, row, col, cell.number, nullptr));
          break;
        case XlsxCell::Kind::Bool:
          check(worksheet_write_boolean(ws_, row, col, cell.number != 0, nullptr));
          break;
        case XlsxCell::Kind::Text:
          check(worksheet_write_string(ws_, row, col, cell.text, nullptr));
          break;
      }
    }
  }

  void close() override {
    lxw_error err = workbook_close(wb_);
    wb_ = nullptr;
    if (err != LXW_NO_ERROR)
      throw std::runtime_error(
          fmt::format("{}: writing the workbook failed: {}", final_path_, lxw_strerror(err)));
  }

 private:
  void write_header(lxw_row_t row, const std::vector<std::string>& names) {
    for (size_t c = 0; c < names.size(); ++c)
      check(worksheet_write_string(ws_, row, static_cast<lxw_col_t>(c), names[c].c_str(), bold_));
  }

  void check(lxw_error err) {
    if (err != LXW_NO_ERROR)
      throw std::runtime_error(
          fmt::format("{}: writing table '{}' failed: {}", final_path_, table_, lxw_strerror(err)));
  }

  std::string final_path_;
  std::string table_;
  lxw_workbook* wb_ = nullptr;
  lxw_worksheet* ws_ = nullptr;
  lxw_format* bold_ = nullptr;
};

}  // namespace
}  // namespace jarvis

extern "C" jarvis::XlsxWorkbook* jarvis_xlsx_workbook_v2(const std::string& temp_path,
                                                         const std::string& final_path,
                                                         bool cells_in_memory) {
  return new jarvis::LxwWorkbook(temp_path, final_path, cells_in_memory);
}
static_assert(std::is_same_v<decltype(&jarvis_xlsx_workbook_v2), jarvis::XlsxModuleEntry>);
