#include "compare/compare_inputs.h"

#include <filesystem>
#include <stdexcept>
#include <vector>

#include "explore/input_format.h"
#include "rocprof/profile.h"

namespace jarvis {
namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Sheets a comparison reads; a directory holding one of them as <sheet>.csv
// is a report (other CSVs, such as rocprofv3's, are not sheets).
bool holds_report_sheets(const fs::path& dir) {
  static const char* const kSheets[] = {"gpu_timeline",
                                        "ops_summary",
                                        "kernel_summary",
                                        "ops_unique_args",
                                        "ops_all",
                                        "unified_perf_summary",
                                        "GEMM",
                                        "SDPA_fwd",
                                        "SDPA_bwd",
                                        "CONV_fwd",
                                        "CONV_bwd",
                                        "UnaryElementwise",
                                        "BinaryElementwise"};
  std::error_code ec;
  for (const char* sheet : kSheets)
    if (fs::is_regular_file(dir / (std::string(sheet) + ".csv"), ec)) return true;
  return false;
}

// The report directories directly inside `dir`: perf_report_csvs/ (what
// `jarvis report --out DIR` and TraceLens write) or *_perf_report_csvs/ (a
// sweep's per-run reports).
std::vector<fs::path> report_subdirs(const fs::path& dir) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (ends_with(name, "perf_report_csvs") && e.is_directory(ec) && holds_report_sheets(e.path()))
      found.push_back(e.path());
  }
  return found;
}

CompareInput classify_dir(const std::string& path) {
  fs::path dir(path);
  if (holds_report_sheets(dir)) return {CompareInputKind::ReportDir, path};
  if (rocprof::detect_input(path) == rocprof::InputKind::CsvSet)
    return {CompareInputKind::Trace, path};
  auto subdirs = report_subdirs(dir);
  if (subdirs.size() == 1) return {CompareInputKind::ReportDir, subdirs[0].string()};
  if (subdirs.size() > 1)
    throw std::runtime_error(path + ": holds " + std::to_string(subdirs.size()) +
                             " report directories (" + subdirs[0].filename().string() + ", " +
                             subdirs[1].filename().string() + ", ...); give one of them");
  throw std::runtime_error(path +
                           ": a directory without report sheets (<sheet>.csv such as "
                           "gpu_timeline.csv), a perf_report_csvs/ directory, or rocprofv3 "
                           "output");
}

CompareInput classify_file(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  if (ends_with(name, ".xlsx")) return {CompareInputKind::ReportXlsx, path};
  if (ends_with(name, ".json") || ends_with(name, ".gz") || ends_with(name, ".pftrace"))
    return {CompareInputKind::Trace, path};  // the loader judges the content
  if (ends_with(name, ".csv")) {
    if (rocprof::detect_input(path) == rocprof::InputKind::CsvSet)
      return {CompareInputKind::Trace, path};
    throw std::runtime_error(path +
                             ": a single CSV sheet is not a report; give the directory "
                             "holding the report's <sheet>.csv files");
  }
  // The other trace formats (XPlane, Nsight Systems exports), by content;
  // a known-but-unreadable file (.nsys-rep) is refused here with its fix.
  if (detect_input_format(path) != InputFormat::KinetoJson) return {CompareInputKind::Trace, path};
  throw std::runtime_error(path +
                           ": not a trace (.json / .json.gz), rocprofv3 output, report "
                           "workbook (.xlsx) or report directory");
}

}  // namespace

CompareInput detect_compare_input(const std::string& path) {
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (!fs::exists(status)) throw std::runtime_error(path + ": no such file or directory");
  if (fs::is_directory(status)) return classify_dir(path);
  return classify_file(path);
}

}  // namespace jarvis
