// What one side of `jarvis compare` is, judged from its path, so the CLI and
// the MCP compare tool accept the same inputs in any mix: a trace (Kineto
// .json/.json.gz, rocprofv3 results file or CSV set), a TraceLens / jarvis
// report directory of <sheet>.csv files (or a directory holding one
// perf_report_csvs/), or a report workbook (.xlsx).
#pragma once

#include <string>

namespace jarvis {

enum class CompareInputKind {
  Trace,       // loaded into a TraceStore (Kineto or rocprofv3)
  ReportDir,   // <sheet>.csv files, read with load_report_dir
  ReportXlsx,  // a workbook, read with load_report_xlsx
};

struct CompareInput {
  CompareInputKind kind = CompareInputKind::Trace;
  // The path to read: the given one, or the perf_report_csvs directory
  // found inside it.
  std::string path;
};

// Classifies `path`:
//  * file: .xlsx -> ReportXlsx; .json / .json.gz / .gz and a rocprofv3
//    *_kernel_trace.csv -> Trace (the trace loader checks the content);
//  * directory: one holding report sheets (gpu_timeline.csv, ops_summary.csv,
//    kernel_summary.csv, ...) -> ReportDir; a rocprofv3 CSV set -> Trace; one
//    holding a single perf_report_csvs/ or *_perf_report_csvs/ directory ->
//    ReportDir of that directory.
// Throws std::runtime_error("<path>: ...") saying what was expected when the
// path is missing or none of these (another .csv file: a single sheet).
CompareInput detect_compare_input(const std::string& path);

}  // namespace jarvis
