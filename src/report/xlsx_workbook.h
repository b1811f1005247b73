// The workbook writer behind write_xlsx (xlsx.h): libxlsxwriter lives in the
// module libjarvis_xlsx.so (src/report/xlsx/, cmake/xlsx.cmake), because it
// brings minizip and libcrypto, whose loading cost every jarvis start about
// 1.6 ms while only the commands writing a workbook need them. The engine
// decides what goes into the sheets (names, widths, cell values); the module
// only writes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace jarvis {

// One cell as the workbook stores it.
struct XlsxCell {
  enum class Kind : uint8_t { Empty, Number, Bool, Text };
  Kind kind = Kind::Empty;
  double number = 0;           // Number: finite; Bool: 0 or 1
  const char* text = nullptr;  // Text: NUL-terminated, non-empty, at most 32767 characters
};

// A workbook being written into a file. Every method throws
// std::runtime_error naming the final path (and the table) on failure.
class XlsxWorkbook {
 public:
  virtual ~XlsxWorkbook() = default;
  // Starts a sheet: column widths, the header rows (bold, frozen): `header`
  // and, when not empty, a second level `header2`. `table` names the table
  // in error messages.
  virtual void add_sheet(const std::string& sheet_name, const std::string& table,
                         const std::vector<double>& widths, const std::vector<std::string>& header,
                         const std::vector<std::string>& header2) = 0;
  // Writes row `row` (0-based, counting the header rows) of the current sheet.
  virtual void write_row(uint32_t row, const XlsxCell* cells, size_t count) = 0;
  // Finishes the file. Destroying an unclosed workbook closes it quietly.
  virtual void close() = 0;
};

// The module's entry point (extern "C", so dlsym finds it by this name): a
// new workbook writing `temp_path`, whose errors name `final_path`. With
// `cells_in_memory` the cells are kept until close() and each text is stored
// once (Excel's shared strings); without, each row is streamed out as it is
// written, in bounded memory. (The name carries the signature's version.)
inline constexpr const char* kXlsxModuleEntry = "jarvis_xlsx_workbook_v2";
using XlsxModuleEntry = XlsxWorkbook* (*)(const std::string& temp_path,
                                          const std::string& final_path, bool cells_in_memory);

}  // namespace jarvis
