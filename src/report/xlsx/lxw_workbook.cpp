// The xlsx module, libjarvis_xlsx.so: XlsxWorkbook (report/xlsx_workbook.h)
// over libxlsxwriter, cells kept until close() or, for large workbooks,
// streamed to disk as written (constant-memory mode). It uses nothing of the
// jarvis binary.
#include <dlfcn.h>
#include <fmt/format.h>
#include <xlsxwriter.h>
#include <zip.h>  // minizip's, the zip writer libxlsxwriter uses

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

// libxlsxwriter deflates every part of a workbook at zlib's default level (6)
// and has no option for it; that deflate was 40 % of writing a report's
// workbook (19 ms of the GPT-2 x4 report's ~45 ms on a 2-core Xeon VM; level 1:
// 8 ms, a 19 % larger file). libxlsxwriter opens each part through minizip's
// zipOpenNewFileInZip4_64, and the dynamic linker resolves that call to the
// first definition in this module's lookup scope: the module itself (loaded
// before its dependencies; the binary, searched first, defines none). This
// definition passes the call on to minizip's with Z_BEST_SPEED. Should a
// libxlsxwriter bind minizip otherwise, this is never called and the workbook
// is written as before (tests/report/test_xlsx.cpp checks the level used).
extern "C" int zipOpenNewFileInZip4_64(zipFile file, const char* filename,
                                       const zip_fileinfo* zipfi, const void* extrafield_local,
                                       uInt size_extrafield_local, const void* extrafield_global,
                                       uInt size_extrafield_global, const char* comment, int method,
                                       int level, int raw, int windowBits, int memLevel,
                                       int strategy, const char* password, uLong crcForCrypting,
                                       uLong versionMadeBy, uLong flagBase, int zip64) {
  using Open = decltype(&zipOpenNewFileInZip4_64);
  static const auto minizip_open =
      reinterpret_cast<Open>(dlsym(RTLD_NEXT, "zipOpenNewFileInZip4_64"));
  if (!minizip_open) return ZIP_INTERNALERROR;
  if (method == Z_DEFLATED && !raw) level = Z_BEST_SPEED;
  return minizip_open(file, filename, zipfi, extrafield_local, size_extrafield_local,
                      extrafield_global, size_extrafield_global, comment, method, level, raw,
                      windowBits, memLevel, strategy, password, crcForCrypting, versionMadeBy,
                      flagBase, zip64);
}

extern "C" jarvis::XlsxWorkbook* jarvis_xlsx_workbook_v2(const std::string& temp_path,
                                                         const std::string& final_path,
                                                         bool cells_in_memory) {
  return new jarvis::LxwWorkbook(temp_path, final_path, cells_in_memory);
}
static_assert(std::is_same_v<decltype(&jarvis_xlsx_workbook_v2), jarvis::XlsxModuleEntry>);
