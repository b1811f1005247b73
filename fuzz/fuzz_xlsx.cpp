// libFuzzer target for the .xlsx reader (src/report/xlsx_read.cpp), the
// workbooks `compare` takes. The first byte picks what the rest is:
//   even: a whole file, read as a workbook (the zip layer: end record,
//         central directory, local headers, sizes, inflate, CRC);
//   odd:  the XML parts of a one-sheet workbook, separated by NUL bytes
//         (sheet1.xml, sharedStrings.xml, workbook.xml, workbook.xml.rels;
//         parts left out keep their defaults), stored in a zip built here
//         with the right CRCs, so mutations reach the XML scanner instead of
//         failing the CRC check.
// A refusal must be the reader's runtime_error naming the input; anything
// else (another exception, a crash, a sanitizer report, a table breaking the
// limits, an input running past -timeout or -rss_limit_mb) is a finding.
// Seeds: fuzz/corpus_xlsx (small workbooks in both forms).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "report/xlsx_read.h"
#include "tiny_zip.h"

namespace {

const std::string kLabel = "fuzz.xlsx";

std::string workbook_from_parts(std::string_view parts) {
  namespace zip = jarvis::tiny_zip;
  std::vector<std::string> part;
  for (size_t at = 0; part.size() < 4;) {
    size_t nul = parts.find('\0', at);
    part.emplace_back(parts.substr(at, nul == std::string_view::npos ? nul : nul - at));
    if (nul == std::string_view::npos) break;
    at = nul + 1;
  }
  auto entries =
      zip::workbook_entries(part[0], part.size() > 1 ? std::optional(part[1]) : std::nullopt);
  if (part.size() > 2) entries[1].data = part[2];
  if (part.size() > 3) entries[2].data = part[3];
  return zip::build(entries);
}

void check_limits(const std::vector<jarvis::Table>& tables) {
  for (const jarvis::Table& t : tables) {
    if (t.columns.size() > jarvis::xlsx_limits::kMaxColumns) std::abort();
    if (t.rows.size() >= jarvis::xlsx_limits::kMaxRows) std::abort();
    for (const auto& row : t.rows)
      if (row.size() != t.columns.size()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string workbook = (data[0] & 1) ? workbook_from_parts(rest) : std::string(rest);
  try {
    check_limits(jarvis::read_xlsx_workbook_from_memory(workbook, kLabel));
  } catch (const std::runtime_error& e) {
    if (std::string_view(e.what()).rfind(kLabel + ": not a readable xlsx workbook: ", 0) != 0)
      std::abort();
  }
  return 0;
}
