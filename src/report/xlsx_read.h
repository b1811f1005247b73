// Reading sheets back from an .xlsx workbook (TraceLens's perf_report.xlsx,
// or one written by write_xlsx), so report workbooks can be used where the
// perf_report_csvs directory is expected.
//
// Only what report workbooks use: a zip of stored or deflated entries (no
// zip64, no encryption), shared / inline / formula-string / boolean / number
// cells. Cells come back as text, as read_csv_file gives them: the header row
// names the columns, empty cells are missing.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/table.h"

namespace jarvis {

// The named sheets that exist in the workbook (others are skipped). Throws
// std::runtime_error naming the file when it is not a readable workbook.
std::map<std::string, Table> read_xlsx_sheets(const std::string& path,
                                              const std::vector<std::string>& sheets);

// Every sheet of the workbook in workbook order (Table::name = sheet name),
// or only those named in `only`. Throws std::runtime_error naming the file
// when it is not a readable workbook.
std::vector<Table> read_xlsx_workbook(
    const std::string& path, const std::optional<std::vector<std::string>>& only = std::nullopt);

}  // namespace jarvis
