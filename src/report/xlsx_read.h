// Reading sheets back from an .xlsx workbook (TraceLens's perf_report.xlsx,
// or one written by write_xlsx), so report workbooks can be used where the
// perf_report_csvs directory is expected.
//
// Only what report workbooks use: a zip of stored or deflated entries (no
// zip64, no encryption), shared / inline / formula-string / boolean / number
// cells. Cells come back as text, as read_csv_file gives them: the header row
// names the columns, empty cells are missing.
//
// A workbook is input from outside (compare takes any path, also over MCP),
// so every size and index in it is checked before use and the reader's work
// and memory are bounded by the limits below, whatever the headers claim. A
// workbook breaking one is refused with a std::runtime_error saying which.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/table.h"

namespace jarvis {

namespace xlsx_limits {
// The workbook file itself (read whole into memory).
inline constexpr size_t kMaxFileBytes = size_t{256} << 20;
// One zip entry's uncompressed size, as declared and as inflated.
inline constexpr size_t kMaxEntryBytes = size_t{256} << 20;
// All entries inflated while reading one workbook.
inline constexpr size_t kMaxInflatedBytes = size_t{1} << 30;
// Deflate cannot expand more than 1032:1 (258-byte matches in 2 bits); an
// entry declaring more than that over its compressed size is lying.
inline constexpr size_t kMaxDeflateRatio = 1032;
// Excel's sheet size: columns A..XFD, rows 1..1048576.
inline constexpr size_t kMaxColumns = 16384;
inline constexpr size_t kMaxRows = 1048576;
// Cells of the returned tables (rows x header width, missing cells included,
// all sheets together): at most kCellSlack + kCellsPerXmlByte per byte of
// sheet XML read, and never more than kMaxCells. Missing cells cost no XML,
// so without this a short header reaching column XFD and a run of empty rows
// would make a few KB of XML into GBs of table.
inline constexpr size_t kMaxCells = size_t{1} << 24;
inline constexpr size_t kCellSlack = size_t{1} << 16;
inline constexpr size_t kCellsPerXmlByte = 2;
// Text of the returned cells, all sheets together: a shared string is
// copied into every cell that refers to it, so a long one referred to often
// multiplies. At most kTextSlack + kTextPerXmlByte per byte of sheet XML,
// and never more than kMaxTextBytes.
inline constexpr size_t kMaxTextBytes = size_t{256} << 20;
inline constexpr size_t kTextSlack = size_t{16} << 20;
inline constexpr size_t kTextPerXmlByte = 64;
// Entries of xl/sharedStrings.xml.
inline constexpr size_t kMaxSharedStrings = size_t{1} << 24;
}  // namespace xlsx_limits

// The named sheets that exist in the workbook (others are skipped). Throws
// std::runtime_error naming the file when it is not a readable workbook.
std::map<std::string, Table> read_xlsx_sheets(const std::string& path,
                                              const std::vector<std::string>& sheets);

// Every sheet of the workbook in workbook order (Table::name = sheet name),
// or only those named in `only`. Throws std::runtime_error naming the file
// when it is not a readable workbook.
std::vector<Table> read_xlsx_workbook(
    const std::string& path, const std::optional<std::vector<std::string>>& only = std::nullopt);

// The same from the workbook's bytes in memory; errors name `label` where
// the others name the file.
std::vector<Table> read_xlsx_workbook_from_memory(
    std::string_view bytes, const std::string& label,
    const std::optional<std::vector<std::string>>& only = std::nullopt);

}  // namespace jarvis
