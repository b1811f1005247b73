// The engine facade: the one API the CLI (src/cli) and the MCP tool adapters
// (src/mcp) call, for every capability of the analysis engine.
//
// Everything below src/engine (trace readers, call tree, perf models, report
// tables, the analyses) is the engine's internals: cli/ and mcp/ include this
// header (plus base/, their own headers and fmt / nlohmann JSON) and name the
// capabilities as jarvis::engine::<name>. tests/engine/test_engine_facade.cpp fails
// when a file under src/cli or src/mcp includes an internal header.
//
// The facade adds no behaviour: each entry is a typed re-export of the
// capability folder's public function or type (a using-declaration, so the
// signature, the defaults and the errors are the folder's own; the comments
// next to the declarations there stay the reference). A few names are
// re-exported under a longer name where the folder's own name is too generic
// for one namespace (rocprof::ReportOptions -> RocprofReportOptions,
// critical_path::Analysis -> CriticalPathAnalysis, ...).
//
// Value types that results and options are made of (Table / Cell, Trace,
// CallTree, Report, LoadedTrace, the option and result structs of each
// capability) travel with the functions that produce them; see the groups
// below. Exceptions to "include only engine.h", listed in the test:
// pycompat/text.h (ASCII case helpers, no engine state) and, from cli/ only,
// scaleout/scaleout.h (MPI work lists), a layer above the engine that only
// the CLI links.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

// Core value types and loaders.
#include "engine/process_budget.h"
#include "explore/trace_store.h"
#include "perf/categories.h"
#include "perf/gpu_arch.h"
#include "report/report.h"
#include "report/table.h"
#include "report/xlsx.h"
#include "trace/loader.h"
#include "trace/snapshot.h"
#include "trace/trace.h"
#include "tree/call_tree.h"
// Capabilities (one public header each, a few with a second one for their
// JSON / file forms).
#include "ab/ab.h"
#include "ab/calibrate.h"
#include "ab/host_step.h"
#include "categories/category_analysis.h"
#include "categories/category_insights.h"
#include "categories/final_report.h"
#include "categories/findings.h"
#include "categories/findings_check.h"
#include "categories/op_regimes.h"
#include "categories/prepare.h"
#include "categories/prepare_trace.h"
#include "categories/what_if_impact.h"
#include "charts/annotated_trace.h"
#include "charts/findings_page.h"
#include "charts/memory_page.h"
#include "charts/report_page.h"
#include "collectives/collectives.h"
#include "collectives/collectives_json.h"
#include "compare/compare.h"
#include "compare/compare_inputs.h"
#include "compare/compare_traces.h"
#include "critical_path/calibration.h"
#include "critical_path/critical_path.h"
#include "critical_path/host_gaps.h"
#include "critical_path/what_if_request.h"
#include "explore/gemm_roofline.h"
#include "explore/input_format.h"
#include "explore/parent_chain.h"
#include "explore/rocprof_trace.h"
#include "explore/summaries.h"
#include "insights/insights.h"
#include "insights/trace_health.h"
#include "memory/memory.h"
#include "nsys/export.h"
#include "replay/replay.h"
#include "rocprof/counters.h"
#include "rocprof/profile.h"
#include "rocprof/report.h"
#include "sql/export.h"
#include "sql/sql.h"
#include "sql/sweep_sql.h"
#include "sweep/gate.h"
#include "sweep/sweep.h"
#include "sweep/sweep_store.h"
#include "xplane/kernel_summary.h"
#include "xplane/perf_sheets.h"
#include "xplane/report.h"
#include "xplane/space.h"

namespace jarvis::engine {

// JSON as TraceLens writes it (key order kept) and as tools return it.
using ojson = analysis::ojson;
using json = nlohmann::json;

// ---------------------------------------------------------------------------
// Value types
// ---------------------------------------------------------------------------
using jarvis::CallTree;
using jarvis::Cell;
using jarvis::GpuArch;
using jarvis::LoadedTrace;
using jarvis::Report;
using jarvis::ReportOptions;
using jarvis::Table;
using jarvis::Trace;
using jarvis::TraceError;
using jarvis::TraceStore;

// ---------------------------------------------------------------------------
// Traces: load a Kineto trace or a rocprofv3 profile, the loaded-trace store
// and what it caches per trace (call tree, GPU timeline, report)
// ---------------------------------------------------------------------------
using jarvis::detect_arch_name;
using jarvis::load_trace;  // Kineto JSON (.json / .json.gz), throws TraceError
// The one input dispatch: what a path holds (by content) and any input read
// into the event model (src/explore/input_format.h).
using jarvis::detect_input_format;
using jarvis::input_format_name;
using jarvis::InputFormat;
using jarvis::load_any_trace;
using jarvis::load_non_kineto_input;
using jarvis::LoadedInput;
// The same, the snapshot of a first load written beside the caller's work.
using jarvis::graph_file_of_path;
using jarvis::load_trace_write_behind;
using jarvis::same_trace_state;
using jarvis::SnapshotWriteBehind;
using jarvis::trace_call_tree;
using jarvis::trace_perf_rows;
using jarvis::trace_report;
using jarvis::trace_step_model;
using jarvis::trace_timeline;
// rocprofv3 outputs (JSON results or a CSV set) read as a Profile, and as a
// Trace of the same events for the tools that work on traces.
using RocprofProfile = rocprof::Profile;
using rocprof::is_rocprof_input;
using rocprof::is_rocprof_trace;
using rocprof::load_profile;
inline Trace rocprof_to_trace(const RocprofProfile& profile) {
  return rocprof::to_trace(profile);
}
using analysis::attach_rocprof_profile;
using analysis::rocprof_profile;  // the profile a loaded rocprof trace came from
// Nsight Systems SQLite exports read as an Export (the export's own tables),
// and as a Trace of the same events.
using NsysExport = nsys::Export;
using nsys::is_nsys_input;
using nsys::is_nsys_trace;
using nsys::load_export;
inline Trace nsys_to_trace(const NsysExport& ex) {
  return nsys::to_trace(ex);
}
// XPlane (XSpace protobuf, jax.profiler / XProf) input: the bridge's
// counts for the trace health and TraceLens's JAX report sheets.
using XplaneBridgeCounts = xplane::BridgeCounts;
using xplane::is_xplane_trace;
inline XplaneBridgeCounts xplane_counts(const Trace& trace) {
  return xplane::counts_of(trace);
}
using analysis::xplane_report_tables;
// GPU arch descriptions (bundled arch/*.json or a file).
using perf::bundled_gpu_arch_names;
using perf::GpuArchError;
using perf::load_gpu_arch;
using perf::parse_gpu_arch;
// Op categories as users name them (aliases accepted).
using perf::category_named_by;

// ---------------------------------------------------------------------------
// Reports: the TraceLens perf report (tables), its CSV / XLSX files
// ---------------------------------------------------------------------------
using jarvis::build_report;
using jarvis::foreign_report_files;
using jarvis::load_xlsx_writer;
using jarvis::write_report_csvs;
using jarvis::write_xlsx;
using RocprofReportOptions = rocprof::ReportOptions;
inline std::vector<Table> rocprof_report_tables(const RocprofProfile& profile,
                                                const RocprofReportOptions& options) {
  return rocprof::report_tables(profile, options);
}

// ---------------------------------------------------------------------------
// Explore: trace overview, ops summary, parent chain, GEMM roofline
// ---------------------------------------------------------------------------
using analysis::gemm_roofline_for_report;
using analysis::gemm_roofline_svg;
using analysis::GemmRooflineFilters;
using analysis::ops_summary_rows;
using analysis::OpsSummaryQuery;
using analysis::parent_chain;
using analysis::ParentChainQuery;
using analysis::ParentChainResult;
using analysis::rocprof_gpu_timeline_json;
using analysis::rocprof_health_json;
using analysis::rocprof_info_json;
using analysis::rocprof_ops_summary_rows;
using analysis::trace_gpu_timeline;
using analysis::trace_overview;

// ---------------------------------------------------------------------------
// Categories: prepare (category split, category_filter), analyze_category,
// findings (draft, write, check), the final report, skill prompt names
// ---------------------------------------------------------------------------
using analysis::analysis_order;
using analysis::analyze_category;
using analysis::AnalyzeResult;
using analysis::annotate_operations;
using analysis::build_final_report;
using analysis::clear_analysis_results;
using analysis::direct_kernel_time_ms_by_key;
using analysis::draft_findings;
using analysis::FinalReport;
using analysis::findings_path;
using analysis::FindingsValidation;
using analysis::load_arch_json;
using analysis::prepare_from_loaded_trace;
using analysis::prepare_from_trace;
using analysis::prepared_trace_health;
using analysis::prepared_trace_path;
using analysis::PrepareResult;
using analysis::prompt_for_category;
using analysis::regimes_summary;
using analysis::skill_prompt_names;
using analysis::TracePrepareOptions;
using analysis::validate_findings_in;
using analysis::what_if_impacts;
using analysis::write_final_report;
using analysis::write_findings;

// ---------------------------------------------------------------------------
// Compare: traces, report directories / workbooks, hardware gaps
// ---------------------------------------------------------------------------
using jarvis::add_step_views;
using jarvis::compare_prepared_reports;
using jarvis::compare_sheet_groups;
using jarvis::compare_traces;
using jarvis::CompareInput;
using jarvis::detect_compare_input;
using jarvis::prepare_loaded_trace;
using jarvis::prepare_report_input;
using MergeOrder = frame::MergeOrder;

// ---------------------------------------------------------------------------
// Replay: op reproducer packages
// ---------------------------------------------------------------------------
using replay::make_replay;
using replay::parse_dims;
using replay::replay_summary_json;
using replay::ReplayError;
using replay::ReplayOp;
using replay::ReplayResult;
using ReplaySelection = replay::Selection;

// ---------------------------------------------------------------------------
// Collectives: bandwidths, overlap, multi-rank matching
// ---------------------------------------------------------------------------
using collectives::collective_report;
using collectives::CollectiveError;
using collectives::CollectiveReportOptions;
using collectives::CollectiveReportResult;
using collectives::loaded_trace_collectives_json;
using collectives::multi_rank_json;
using collectives::straggler_verdict;
using collectives::table_rows_json;
using collectives::TimeAlignment;
using collectives::write_collective_tables;

// ---------------------------------------------------------------------------
// Critical path and what-if across ranks
// ---------------------------------------------------------------------------
using CriticalPathAnalysis = critical_path::Analysis;
using critical_path::CriticalPathError;
using RankGraph = critical_path::Loaded;  // the ranks' dependency graph, loaded
using WhatIfResult = critical_path::WhatIfResult;
using WhatIfScenario = critical_path::Scenario;
using WhatIfSelector = critical_path::Selector;
using HostRemoval = critical_path::HostRemoval;
using critical_path::add_host_removal;
using critical_path::load_graph;
using CriticalPathGraph = critical_path::Graph;
using HostRemovalMatch = critical_path::HostRemovalMatch;
using critical_path::trace_graph;
// Without the profiler's estimated host cost (the default), or as recorded.
inline CriticalPathAnalysis critical_path_analysis(const critical_path::Graph& graph,
                                                   bool recorded_host = false) {
  return recorded_host ? critical_path::analyse(graph) : critical_path::analyse_unprofiled(graph);
}
inline json critical_path_json(const CriticalPathAnalysis& analysis, size_t top_n) {
  return critical_path::analysis_json(analysis, top_n);
}
inline std::vector<std::string> write_critical_path(const CriticalPathAnalysis& analysis,
                                                    const std::string& dir) {
  return critical_path::write_analysis(analysis, dir);
}
using critical_path::what_if;
using critical_path::what_if_json;
using critical_path::write_what_if;
// Host time no event records, taken out of the steps (remove_host_gaps).
using HostGapSelector = critical_path::HostGapSelector;
using critical_path::add_host_gap_removal;
// The what_if tool's arguments, read once (also insights' replays).
using WhatIfRequest = critical_path::WhatIfRequest;
using critical_path::parse_what_if_request;

// ---------------------------------------------------------------------------
// Sweeps: loaded sweeps and their tables, pages and outputs
// ---------------------------------------------------------------------------
using sweep::Sweep;
using sweep::SweepError;
using SweepRun = sweep::Run;
using sweep::collective_skew_table;
using SweepLoadOptions = sweep::LoadOptions;
using SweepRunKind = sweep::RunKind;
using sweep::collective_count;
using sweep::compare_sweeps;
using sweep::gemm_empty_reason;
using sweep::gemm_kernel_spread_table;
using sweep::gemm_overlap_table;
using sweep::gemm_timestamps_table;
using sweep::gemm_variance_table;
using sweep::gpu_timeline_tables;
using sweep::kernel_changes_empty_reason;
using sweep::kernel_changes_summary;
using sweep::kernel_reference;
using sweep::kernel_vendor;
using sweep::KernelChangeOptions;
using sweep::kernels_from_csv;
using sweep::kSweepManifest;
using sweep::load_sweep;
using sweep::load_sweep_files;
using sweep::nccl_empty_reason;
using sweep::nccl_table;
using sweep::normalise;
using sweep::nsight_compute_command;
using sweep::rocprof_config;
using sweep::rocprof_config_files;
using sweep::RocprofConfig;
using sweep::run_health_table;
using sweep::run_kind_name;
using sweep::sweep_compare_html_page;
using sweep::sweep_html_page;
using sweep::sweep_manifest_json;
using sweep::sweep_tables;
using sweep::SweepStore;
using sweep::what_changed_kernels_table;
using sweep::what_changed_table;
using sweep::write_rocprof_config;
using sweep::write_sweep_outputs;
using sweep::write_variance_svgs;
// The regression gate (sweep/gate.h).
using sweep::gate;
using sweep::gate_side;
using sweep::gate_summary;
using sweep::gate_table;
using sweep::GateOptions;
using sweep::GateResult;
using sweep::GateSide;
using sweep::load_agent_baseline;
using sweep::load_baseline;
using sweep::save_agent_baseline;
using sweep::save_baseline;

// ---------------------------------------------------------------------------
// Insights and trace health
// ---------------------------------------------------------------------------
using insights::analyse_trace;
using insights::build_step_model;
using insights::ChangePlan;
using insights::Insight;
using insights::InsightContext;
using insights::make_context;
using insights::make_shared_trace_facts;
using insights::plan_changes;
using insights::plan_text;
using insights::rule_ids;
using insights::run_insights;
using insights::shared_trace_facts_in_parts;
using insights::SharedTraceFacts;
using insights::SharedTraceFactsInParts;
using insights::StepModelRef;
using insights::to_json;
using insights::trace_health;
using insights::TraceHeadStart;
using insights::TraceHealth;

// ---------------------------------------------------------------------------
// Memory: allocator timeline, holders at the peak, leaks, two-run diffs
// (traces recorded with profile_memory=True)
// ---------------------------------------------------------------------------
using MemoryAnalysis = memory::MemoryAnalysis;
using MemoryDiff = memory::MemoryDiff;
using MemorySummaryOptions = memory::SummaryOptions;
using memory::analyse_memory;
using memory::diff_memory;
using memory::memory_diff_json;
using memory::memory_diff_text;
using memory::memory_summary_json;
using memory::memory_summary_text;
using memory::trace_memory;
using memory::write_memory_files;

// ---------------------------------------------------------------------------
// SQL over a loaded trace (SQLite, read-only): tables, limits, the catalog
// ---------------------------------------------------------------------------
using SqlQueryLimits = sql::QueryLimits;
using SqlQueryResult = sql::QueryResult;
using SqlQueryError = sql::QueryError;
using SqlQueryTimeout = sql::QueryTimeout;
using SqlTableInfo = sql::TableInfo;
using sql::catalog_text;
using sql::run_query;
using SqlExportResult = sql::ExportResult;
using sql::export_sqlite;
using sql::run_sweep_query;
using sql::sweep_catalog;
using SqlSweepTraces = sql::SweepTraces;
inline std::vector<SqlTableInfo> sql_catalog() {
  return sql::catalog();
}
inline std::vector<SqlTableInfo> sql_catalog(const LoadedTrace& trace) {
  return sql::catalog(trace);
}

// ---------------------------------------------------------------------------
// Charts and HTML pages
// ---------------------------------------------------------------------------
using charts::annotated_trace_gzip;
using charts::annotated_trace_json;
using charts::annotated_trace_name;
using charts::AnnotatedTraceCounts;
using charts::FindingsPage;
using charts::gzip_compress;
using charts::kMemoryChartPoints;
using charts::memory_html;
using charts::MemoryPageOptions;
using charts::render_findings_page;
using charts::report_charts;
using charts::report_html;
using charts::report_verdict;
using charts::ReportPageOptions;
using charts::ReportVerdict;
using charts::write_chart_svgs;

// ---------------------------------------------------------------------------
// Hardware counters (rocprofv3 counter collection)
// ---------------------------------------------------------------------------
using rocprof::dispatch_counters_table;
using rocprof::kernel_counters;
using rocprof::kernel_counters_table;
using rocprof::KernelCounters;
using CounterAggregate = rocprof::Aggregate;
using RocprofAgent = rocprof::Agent;
using rocprof::kCuUtilization;
using rocprof::kMfmaShare;
using rocprof::kWavesPerCu;

// ---------------------------------------------------------------------------
// A/B runs and profiler calibration on the user's machine (docs/ab.md). The
// CLI only: they run user commands, no MCP tool reaches them.
// ---------------------------------------------------------------------------
using ab::AbError;
using ab::AbOptions;
using AbPair = ab::Pair;
using ab::CalibrateOptions;
using ab::Calibration;
using ab::calibration_json;
using ab::default_calibration_path;
using ab::load_truth;
using ab::parse_env_assignment;
using ab::predict;
using ab::run_ab;
using ab::run_calibration;
using ab::table_json;
using ab::table_markdown;
using ab::truth_json;
using critical_path::calibration_dir;
using critical_path::force_calibration;

}  // namespace jarvis::engine
