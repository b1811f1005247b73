// Cross-platform comparison of two traces or reports, in any mix (see
// compare/compare_inputs.h for the input kinds): builds each trace's
// TraceLens report (PyTorch or, for rocprofv3, kernel-only), compares them (compare/compare.h),
// adds the hardware-expected ratios (compare/compare_hw.h) when both GPU archs are known, and
// optionally writes everything as CSV/JSON.
//
// Framing: the first input is the reference, the second the target — the
// platform to improve. Nothing here ranks platforms; the gap analysis lists
// what to investigate on the target.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/compare.h"
#include "compare/compare_hw.h"
#include "compare/compare_inputs.h"
#include "compare/step_views.h"
#include "explore/trace_store.h"
#include "memory/memory.h"
#include "perf/gpu_arch.h"

namespace jarvis {

struct CompareTracesOptions {
  std::string reference_tag = "reference";
  std::string target_tag = "target";
  // A bundled arch name (H100, MI300X, ...) or an arch JSON path. "" = detect
  // from the trace's GPU name (nothing for a report directory); "none" = no
  // arch (no roofline columns, no gap analysis).
  std::string arch_reference, arch_target;
  // When set, every result sheet is written as <dir>/<sheet>.csv, plus
  // hardware_gap_analysis.csv / .json when the gap analysis ran.
  std::string output_dir;
  CompareOptions compare;  // default: every sheet group
  HardwareGapOptions gaps;
  // Nsight Systems captures: the per-iteration step view compares this
  // iteration (by index on each side), found by `iterations` (step_views).
  size_t iteration = 0;
  std::string iterations = "auto";
};

// What bounds one side's step, from the critical path of its trace
// (docs/critical-path.md); absent for report inputs and rocprofv3 traces.
struct StepBound {
  size_t iterations = 0, host_bound_iterations = 0;
  double step_time_us = 0;
  bool host_bound() const { return 2 * host_bound_iterations > iterations; }
};

struct TraceComparison {
  NamedReport reference, target;
  std::optional<StepBound> step_reference, step_target;
  // memory_diff_json of the two traces when both recorded [memory] samples
  // (profile_memory=True): peak and per-step memory, the groups that changed.
  nlohmann::json memory_diff;
  // compare_step_views of two Nsight Systems captures: the whole-capture and
  // the per-iteration step time and a verdict naming its view (null else).
  nlohmann::json step_views;
  std::optional<GpuArch> arch_reference, arch_target;
  CompareResult result;
  std::optional<HardwareGapAnalysis> hardware_gaps;  // both archs known
  std::vector<std::string> notes;                    // what was skipped and why
  std::vector<std::string> files;                    // files written

  // Compact JSON for agents: archs, a `verdict` (each side's GPU idle share
  // and whether its step is host-bound, in one line), the gpu_timeline side by side, the
  // top_n ops_summary rows side by side (by the larger of the two times),
  // the top_n flagged hardware gaps with their share of target time, result
  // sheet names and row counts, notes and files.
  nlohmann::json summary(size_t top_n = 10) const;
};

// One side of a comparison: its report and GPU arch (when known).
struct PreparedReport {
  NamedReport report;
  std::optional<GpuArch> arch;
  std::optional<StepBound> step;
  // Its memory analysis, when the side is a trace with [memory] samples.
  std::shared_ptr<const memory::MemoryAnalysis> memory;
  // An Nsight Systems capture's loaded trace, for its step views.
  std::optional<LoadedTrace> capture;
};

// `arch` as in CompareTracesOptions. The loaded-trace report comes from the
// entry's cache (a rocprofv3 trace gets TraceLens's rocprof report:
// gpu_timeline, kernel_summary, ...); a report directory is read with
// load_report_dir, a workbook with load_report_xlsx.
PreparedReport prepare_loaded_trace(const LoadedTrace& entry, const std::string& tag,
                                    const std::string& arch);
PreparedReport prepare_report_dir(const std::string& dir, const std::string& tag,
                                  const std::string& arch);
PreparedReport prepare_report_xlsx(const std::string& path, const std::string& tag,
                                   const std::string& arch);
// A report input (kind ReportDir or ReportXlsx) as detect_compare_input
// classified it.
PreparedReport prepare_report_input(const CompareInput& input, const std::string& tag,
                                    const std::string& arch);

// Each input is anything detect_compare_input accepts: a trace (Kineto or
// rocprofv3), a report directory (or one holding perf_report_csvs/) or a
// report .xlsx; the two need not be of the same kind. Throws TraceError,
// perf::GpuArchError or std::runtime_error; messages about an input start
// with "REF: " or "TARGET: " and name it.
TraceComparison compare_traces(const std::string& reference_path, const std::string& target_path,
                               const CompareTracesOptions& options = {});

// The same for traces already loaded in a TraceStore (reports are taken from
// its cache).
TraceComparison compare_loaded_traces(const LoadedTrace& reference, const LoadedTrace& target,
                                      const CompareTracesOptions& options = {});

// Compares two prepared reports; archs may be absent. Writes
// options.output_dir when set.
TraceComparison compare_prepared_reports(NamedReport reference, NamedReport target,
                                         std::optional<GpuArch> arch_reference,
                                         std::optional<GpuArch> arch_target,
                                         const CompareTracesOptions& options);

// Adds c.step_views (compare_step_views) when both sides are Nsight Systems
// captures with kernels, with options.iteration / options.iterations; a
// refused options.iterations becomes a note.
void add_step_views(TraceComparison& c, const PreparedReport& reference,
                    const PreparedReport& target, const CompareTracesOptions& options);

}  // namespace jarvis
