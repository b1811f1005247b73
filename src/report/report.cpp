#include "report/report.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "base/output_guard.h"
#include "base/two_threads.h"
#include "report/coll_analysis.h"
#include "report/core_tables.h"

#include "report/perf_tables.h"

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
    out.push_back(report::short_kernel_histogram_table(
        trace, tree, options.short_kernel_threshold_us, options.short_kernel_bins));
    out.push_back(report::short_kernels_summary_table(
        trace, tree, options.short_kernel_threshold_us, total_time_ms));
  }
  // Like TraceLens: no collective sheet for GPU-only traces, none when empty.
  if (options.collective_analysis && !gpu_only) {
    Table coll = coll_analysis_table(collective_kernels(trace, tree.gpu_event_uids()));
    if (!coll.rows.empty()) out.push_back(std::move(coll));
  }
  return out;
}

// ops_summary_by_category, ops_summary, ops_unique_args: none when no kernel
// has a launcher.
std::vector<Table> launcher_tables(const Trace& trace, const CallTree& tree) {
  std::vector<Table> out;
  auto launchers = report::kernel_launcher_rows(trace, tree);
  if (launchers.empty()) return out;
  out.push_back(report::ops_summary_by_category_table(launchers));
  out.push_back(report::ops_summary_table(launchers));
  out.push_back(report::ops_unique_args_table(trace, launchers));
  return out;
}

}  // namespace

Report build_report(const Trace& trace, const CallTree& tree, const ReportOptions& options) {
  Report report;
  report.gpu_only = report::is_gpu_only(trace);
  const bool gpu_only = report.gpu_only;

  // The GPU timeline and the sheet groups read the trace and the tree and
  // share nothing else; they run as tasks on two threads, the costliest
  // first, and their tables are appended in TraceLens's sheet order. Only
  // the kernel-side sheets need the timeline (its total time, which
  // TraceLens reads back from the sheet's "time ms" cell): the timeline is
  // the first task taken, so that wait is short and cannot deadlock.
  TaskLatch timeline_done;
  std::vector<Table> launcher, unified, kernel;
  report::PerfSheets perf;
  std::vector<std::function<void()>> tasks;
  tasks.push_back([&] {
    timeline_done.run([&] {
      report.timeline = options.timeline ? *options.timeline : compute_gpu_timeline(trace, tree);
    });
  });
  if (!gpu_only) {
    tasks.push_back([&] {
      if (auto table = unified_perf_summary(trace, tree, options))
        unified.push_back(std::move(*table));
    });
    tasks.push_back([&] { perf = report::perf_model_sheets(trace, tree, options.arch); });
    tasks.push_back([&] { launcher = launcher_tables(trace, tree); });
  }
  tasks.push_back([&] {
    timeline_done.wait();
    kernel = kernel_side_tables(trace, tree, options, gpu_only, report.timeline.total_time_ms());
  });
  run_on_two_threads(tasks);

  report.tables.push_back(gpu_timeline_table(report.timeline));
  report.model_failures = std::move(perf.model_failures);
  for (auto* part : {&launcher, &unified, &perf.tables, &kernel})
    for (Table& t : *part) report.tables.push_back(std::move(t));
  return report;
}

void write_report_csvs(const Report& report, const std::string& dir) {
  auto dir_lock = lock_output_dir(dir);  // concurrent writers of one report take turns
  // Render everything first so a failure leaves no file behind.
  std::vector<std::pair<std::string, std::string>> files;
  for (const Table& t : report.tables)
    files.emplace_back((std::filesystem::path(dir) / (t.name + ".csv")).string(), t.to_csv());
  write_files_atomic(files);
  std::vector<std::string> names;
  for (const Table& t : report.tables) names.push_back(t.name + ".csv");
  record_report_files(dir, names);
}

namespace {

// The marker's lines by the name each lists.
std::map<std::string, std::string> recorded_files(const std::filesystem::path& dir) {
  std::map<std::string, std::string> lines;
  std::ifstream marker(dir / kReportMarker);
  for (std::string line; std::getline(marker, line);)
    if (!line.empty()) lines[std::string(report_marker_name(line))] = line;
  return lines;
}

}  // namespace

void record_report_files(const std::string& dir, const std::vector<std::string>& names) {
  std::map<std::string, std::string> all = recorded_files(dir);
  for (const auto& name : names)
    if (std::string line = report_marker_line(std::filesystem::path(dir) / name); !line.empty())
      all[name] = std::move(line);
  std::string listing;
  for (const auto& entry : all) listing += entry.second + "\n";
  write_file_atomic((std::filesystem::path(dir) / kReportMarker).string(), listing);
}

std::vector<std::string> foreign_report_files(const std::string& dir) {
  std::vector<std::string> foreign;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name == kReportMarker) continue;
    // jarvis's only as it wrote it: an edited file is the user's again.
    if (!written_by_jarvis(entry.path()) && !listed_unchanged_in_marker(entry.path()))
      foreign.push_back(name);
  }
  std::sort(foreign.begin(), foreign.end());
  return foreign;
}

}  // namespace jarvis
