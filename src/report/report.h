// The TraceLens-compatible performance report: every sheet as a Table, in
// TraceLens's sheet order (spec tree-and-timeline.md §17.1), and the CSV
// writer for `jarvis report`.
//
// The perf-model sheets (unified_perf_summary, GEMM, SDPA_fwd, ...) come from
// report/perf_tables.h and land where TraceLens writes them: after
// ops_unique_args, before kernel_summary.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/gpu_timeline.h"
#include "report/table.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis {

struct GpuArch;  // defined by src/perf/gpu_arch.h

struct ReportOptions {
  const GpuArch* arch = nullptr;
  bool kernel_summary = true;
  bool short_kernel_study = true;
  double short_kernel_threshold_us = 10.0;
  int short_kernel_bins = 100;
  bool include_python_frames = false;
  bool collective_analysis = true;  // coll_analysis sheet (TraceLens default on)
  // compute_gpu_timeline(trace, tree) when the caller already has it (a
  // loaded trace's cached timeline); null: build_report computes it.
  const GpuTimeline* timeline = nullptr;
};

// Ops a perf model could not compute (bad or missing args, inconsistent
// shapes): TraceLens skips them with a printed warning; jarvis skips them the
// same way (the sheets stay equal) and keeps the reason here, one entry per
// (op name, reason) with how many ops it hit.
struct ModelFailure {
  std::string op;
  std::string reason;
  size_t count = 0;
};

struct Report {
  std::vector<Table> tables;                 // sheet order
  std::vector<ModelFailure> model_failures;  // sorted by op, then reason
  GpuTimeline timeline;                      // the numbers behind gpu_timeline
  bool gpu_only = false;                     // trace without cpu_ops: only GPU sheets

  const Table* find(std::string_view name) const;
};

// Builds every sheet. Throws std::runtime_error when the trace has no GPU
// event linked to a launch ("No GPU events found in the trace").
Report build_report(const Trace& trace, const CallTree& tree, const ReportOptions& options);

// Writes DIR/<table>.csv for every table (each file written atomically) and
// records them in DIR's marker.
void write_report_csvs(const Report& report, const std::string& dir);

// DIR/.jarvis-report lists the files jarvis wrote into a report directory,
// each with the hash of what it wrote (base/output_guard.h), so that a later
// run knows which files it may replace and which belong to someone else,
// edited ones included (docs/cli.md, "Outputs never surprise").
inline constexpr const char* kReportMarker = ".jarvis-report";
// Adds names (file names inside dir) to dir's marker, keeping earlier ones.
void record_report_files(const std::string& dir, const std::vector<std::string>& names);
// Files in dir that are not jarvis's as it wrote them (neither in the write
// ledger with their current identity nor in the marker with the hash of
// their current content: a file someone else put there or edited), sorted;
// empty when dir does not exist.
std::vector<std::string> foreign_report_files(const std::string& dir);

}  // namespace jarvis
