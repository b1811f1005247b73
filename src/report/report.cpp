#include "report/report.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <thread>

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

namespace {

// The kernel-side sheets (kernel_summary, the short-kernel study, the
// collective sheet): they read only the trace and the call tree.
std::vector<Table> kernel_side_tables(const Trace& trace, const CallTree& tree,
                                      const ReportOptions& options, bool gpu_only,
                                      double total_time_ms) {
  std::vector<Table> out;
  if (options.kernel_summary) {
    Table ks = report::kernel_summary_table(trace, tree, total_time_ms);
    if (!ks.rows.empty()) out.push_back(std::move(ks));
  }
  if (options.short_kernel_study) {
    out.push_back(report::short_kernel_histogram_table(trace, options.short_kernel_threshold_us,
                                                       options.short_kernel_bins));
    out.push_back(report::short_kernels_summary_table(
        trace, tree, options.short_kernel_threshold_us, total_time_ms));
  }
  // Like TraceLens: no collective sheet for GPU-only traces, none when empty.
  if (options.collective_analysis && !gpu_only) {
    Table coll = coll_analysis_table(collective_kernels(trace));
    if (!coll.rows.empty()) out.push_back(std::move(coll));
  }
  return out;
}

}  // namespace

Report build_report(const Trace& trace, const CallTree& tree, const ReportOptions& options) {
  Report report;
  report.timeline = options.timeline ? *options.timeline : compute_gpu_timeline(trace, tree);
  report.gpu_only = report::is_gpu_only(trace);
  report.tables.push_back(gpu_timeline_table(report.timeline));
  // TraceLens reads total_time back from the sheet's "time ms" cell.
  const double total_time_ms = report.timeline.total_time_ms();

  // The kernel-side sheets do not depend on the host-op sheets: with a second
  // core they are built beside them (the trace and the tree are only read),
  // and appended after them in TraceLens's sheet order either way.
  const bool gpu_only = report.gpu_only;
  auto kernel_side = [&] {
    return kernel_side_tables(trace, tree, options, gpu_only, total_time_ms);
  };
  std::future<std::vector<Table>> kernel_tables;
  if (std::thread::hardware_concurrency() > 1 && !gpu_only)
    kernel_tables = std::async(std::launch::async, kernel_side);

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

  std::vector<Table> kernel = kernel_tables.valid() ? kernel_tables.get() : kernel_side();
  for (Table& t : kernel) report.tables.push_back(std::move(t));
  return report;
}

void write_report_csvs(const Report& report, const std::string& dir) {
  auto dir_lock = lock_output_dir(dir);  // concurrent writers of one report take turns
  // Render everything first so a failure leaves no file behind.
  std::vector<std::pair<std::string, std::string>> files;
  for (const Table& t : report.tables)
    files.emplace_back((std::filesystem::path(dir) / (t.name + ".csv")).string(), t.to_csv());
  for (const auto& [path, text] : files) write_file_atomic(path, text);
  std::vector<std::string> names;
  for (const Table& t : report.tables) names.push_back(t.name + ".csv");
  record_report_files(dir, names);
}

namespace {

std::set<std::string> recorded_files(const std::filesystem::path& dir) {
  std::set<std::string> names;
  std::ifstream marker(dir / kReportMarker);
  for (std::string line; std::getline(marker, line);)
    if (!line.empty()) names.insert(line);
  return names;
}

}  // namespace

void record_report_files(const std::string& dir, const std::vector<std::string>& names) {
  std::set<std::string> all = recorded_files(dir);
  all.insert(names.begin(), names.end());
  std::string listing;
  for (const auto& name : all) listing += name + "\n";
  write_file_atomic((std::filesystem::path(dir) / kReportMarker).string(), listing);
}

std::vector<std::string> foreign_report_files(const std::string& dir) {
  std::set<std::string> ours = recorded_files(dir);
  std::vector<std::string> foreign;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name != kReportMarker && !ours.count(name)) foreign.push_back(name);
  }
  std::sort(foreign.begin(), foreign.end());
  return foreign;
}

}  // namespace jarvis
