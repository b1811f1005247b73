// Report comparison: TraceLens's compare_perf_reports_pytorch over report
// tables (spec compare-and-replay.md Part 1).
//
// The first report is the baseline (reference), the others are variants.
// Every compared sheet is tagged ("<tag>::<column>"), outer-merged on its key
// columns, and gets "<col>__<tag>_diff" (variant - baseline) and
// "<col>__<tag>_pct" (100 * diff / baseline, missing when the baseline is 0)
// columns. Per-op sheets are split into <name>_intersect_<tag>,
// <name>_only_baseline_<tag> and <name>_only_variant_<tag>.
//
// TraceLens behaviours reproduced on purpose (see docs/deviations.md):
//  * Matching is purely textual: the same op with a different dtype string,
//    stride or category does not match.
//  * A sheet group named in CompareOptions::sheet_groups must be in every
//    report (ops_summary / kernel_summary: TraceLens's "sheet not found").
//
// Deliberate deviation: under "all" only the sheets every report has are
// compared (TraceLens requires ops_summary there, so a kernel-only rocprof
// report cannot be compared); what is skipped is listed in the notes.
//  * Roofline sheets are skipped when empty in any report.
//  * Split sheets lose every all-missing column, key columns included; an
//    empty split sheet has no columns at all.
//  * Sorts are pandas' unstable quicksort: ties keep NumPy's order.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compare/compare_frame.h"
#include "report/table.h"

namespace jarvis {

// One report: its tag and its sheets (Table::name = sheet name).
struct NamedReport {
  NamedReport() = default;
  NamedReport(std::string t, std::vector<Table> s, std::string src = "")
      : tag(std::move(t)), sheets(std::move(s)), source(std::move(src)) {}

  std::string tag;
  std::vector<Table> sheets;
  // What the report was read from (a path), for error messages; may be "".
  std::string source;
  // The sheet named `name`, or nullptr.
  const Table* sheet(const std::string& name) const;
};

struct CompareOptions {
  // Sheet groups: "gpu_timeline", "ops_summary", "kernel_summary", "ops_all",
  // "roofline", or "all" (every group).
  std::vector<std::string> sheet_groups = {"all"};
  // FirstAppearance = pandas < 2.2, what the conformance references were
  // produced with; Lexicographic = pandas >= 2.2.
  frame::MergeOrder merge_order = frame::MergeOrder::FirstAppearance;
};

struct CompareResult {
  // Result sheets in TraceLens order: gpu_timeline, ops_summary,
  // kernel_summary, the ops_unique_args / unified_perf_summary splits, then
  // the roofline splits (GEMM, SDPA_fwd, SDPA_bwd, CONV_fwd, CONV_bwd,
  // un_eltwise, bin_eltwise).
  std::vector<Table> tables;
  // Sheets left out and why (e.g. a roofline sheet empty in one report).
  std::vector<std::string> notes;
  const Table* table(const std::string& name) const;
};

// The sheet groups understood by CompareOptions::sheet_groups.
const std::vector<std::string>& compare_sheet_groups();

// Compares reports[0] (baseline) with reports[1..]. Throws std::runtime_error
// for fewer than two reports, duplicate tags, an unknown sheet group, a
// sheet of a named group or a required column missing from a report, sheets
// of different styles (a PyTorch-trace kernel_summary vs a rocprof one) in a
// named group, or when no selected sheet is in every report.
CompareResult compare_reports(const std::vector<NamedReport>& reports,
                              const CompareOptions& options = {});

// Reads a TraceLens report directory (one <sheet>.csv per sheet) with the
// column types pandas read_csv infers. Zero-byte or header-less files give
// empty sheets. Throws std::runtime_error if `dir` is not a directory.
NamedReport load_report_dir(const std::string& dir, const std::string& tag);

// Reads a report workbook (.xlsx: TraceLens's perf_report.xlsx or one written
// by `jarvis report --xlsx`) with the column types pandas read_excel gives:
// every sheet, typed as load_report_dir types CSV cells (a float column whose
// values are all whole numbers reads as int, as in pandas). Throws
// std::runtime_error naming the file when it is not a readable workbook.
NamedReport load_report_xlsx(const std::string& path, const std::string& tag);

// Gives report tables built in memory (from a trace) the cells the same
// report has when read back from its CSV files, so a trace compares with a
// report directory or workbook of it cell for cell (a bool or tuple-valued
// param key matches its written text; float columns hold doubles, NaN is
// missing).
void normalize_report(NamedReport& report);

// Writes every result table as <dir>/<name>.csv (atomically); returns the paths.
std::vector<std::string> write_compare_csvs(const CompareResult& result, const std::string& dir);

}  // namespace jarvis
