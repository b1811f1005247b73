#include "report/report.h"

#include <filesystem>

#include "report/coll_analysis.h"
#include "report/core_tables.h"

#if __has_include("report/perf_tables.h")
#include "report/perf_tables.h"
#define JARVIS_HAVE_PERF_TABLES 1
#endif

namespace jarvis {

const Table* Report::find(std::string_view name) const {
  for (const Table& t : tables)
    if (t.name == name) return &t;
  return nullptr;
}

Report build_report(const Trace& trace, const CallTree& tree, const ReportOptions& options) {
  Report report;
  report.timeline = compute_gpu_timeline(trace, tree);
  report.gpu_only = report::is_gpu_only(trace);
  report.tables.push_back(gpu_timeline_table(report.timeline));
  // TraceLens reads total_time back from the sheet's "time ms" cell.
  const double total_time_ms = report.timeline.total_time_ms();

  if (!report.gpu_only) {
    {  // scoped: the launcher rows are freed before the perf sheets are built
      auto launchers = report::kernel_launcher_rows(trace, tree);
      if (!launchers.empty()) {
        report.tables.push_back(report::ops_summary_by_category_table(launchers));
        report.tables.push_back(report::ops_summary_table(launchers));
        report.tables.push_back(report::ops_unique_args_table(trace, launchers));
      }
    }
#ifdef JARVIS_HAVE_PERF_TABLES
    // ---- perf-model sheets (unified_perf_summary, GEMM, SDPA_fwd, ...) ----
    add_perf_tables(report, trace, tree, options);
#endif
  }

  if (options.kernel_summary) {
    Table ks = report::kernel_summary_table(trace, tree, total_time_ms);
    if (!ks.rows.empty()) report.tables.push_back(std::move(ks));
  }
  if (options.short_kernel_study) {
    report.tables.push_back(report::short_kernel_histogram_table(
        trace, options.short_kernel_threshold_us, options.short_kernel_bins));
    report.tables.push_back(report::short_kernels_summary_table(
        trace, tree, options.short_kernel_threshold_us, total_time_ms));
  }
  // Like TraceLens: no collective sheet for GPU-only traces, none when empty.
  if (options.collective_analysis && !report.gpu_only) {
    Table coll = coll_analysis_table(collective_kernels(trace));
    if (!coll.rows.empty()) report.tables.push_back(std::move(coll));
  }
  return report;
}

void write_report_csvs(const Report& report, const std::string& dir) {
  auto dir_lock = lock_output_dir(dir);  // concurrent writers of one report take turns
  // Render everything first so a failure leaves no file behind.
  std::vector<std::pair<std::string, std::string>> files;
  for (const Table& t : report.tables)
    files.emplace_back((std::filesystem::path(dir) / (t.name + ".csv")).string(), t.to_csv());
  for (const auto& [path, text] : files) write_file_atomic(path, text);
}

}  // namespace jarvis
