// Excel workbook output for report tables (`jarvis report --xlsx FILE`).
#pragma once

#include <string>
#include <vector>

#include "report/table.h"

namespace jarvis {

// Writes one worksheet per table, in order: sheet name = table name made
// valid for Excel (at most 31 characters, no []:*?/\, unique ignoring case),
// bold frozen header row, numbers stored as numbers (NaN/inf and missing
// cells left empty), text as text, columns sized to their content.
// The file appears atomically (written next to path, then renamed); on any
// error nothing is left at path and std::runtime_error names the file.
void write_xlsx(const std::vector<Table>& tables, const std::string& path);

// Loads the workbook writer (the module libjarvis_xlsx.so), which write_xlsx
// otherwise loads on first use: a command that will write a workbook calls
// it first, so a missing module fails before any work or output. Throws
// std::runtime_error naming the paths tried.
void load_xlsx_writer();

// The sheet names write_xlsx gives these tables (exposed for tests/callers).
std::vector<std::string> xlsx_sheet_names(const std::vector<Table>& tables);

}  // namespace jarvis
