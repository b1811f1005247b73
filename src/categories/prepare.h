// Orchestrator preparation (TraceLens Agent steps 2-5): splits the unified
// perf summary into per-category CSVs, writes category metadata, the
// category manifest, model_info and the cpu_idle placeholders, as
// TraceLens/Agent/Analysis/utils/orchestrator_prepare.py does. Works on
// perf-report tables (by sheet name), so it runs equally on tables built
// from a trace and on perf_report_csvs/*.csv read from disk.
//
// Trace-derived files (multi_kernel_data.json, fusion_candidates.json,
// <cat>_tree_data.json) are computed elsewhere (prepare_trace.h) and handed
// in through PrepareInputs; when absent they are not written and the
// manifest omits the multi_kernel / kernel_fusion entries, exactly as
// TraceLens does when its tree step fails.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "categories/category_analysis_common.h"
#include "report/table.h"

namespace jarvis::analysis {

struct PrepareOptions {
  std::string platform;          // recorded as "platform" (e.g. "MI300X")
  ojson arch;                    // arch dict: mem_bw_gbps, memory_gb, max_achievable_tflops
  std::string trace_path;        // recorded verbatim in metadata / manifest
  std::string output_dir;        // where files are written; recorded verbatim
  std::string category = "all";  // one normalized category key, or "all"
  // Also write every perf table as <output_dir>/perf_report_csvs/<sheet>.csv
  // (Step 1's output; the cpu_idle / multi_kernel / kernel_fusion analyses
  // read gpu_timeline, ops_summary and unified_perf_summary from there).
  bool write_perf_report_csvs = true;
};

struct PrepareInputs {
  std::optional<ojson> multi_kernel_data;  // category_data/multi_kernel_data.json
  std::optional<ojson> fusion_candidates;  // category_data/fusion_candidates.json (array)
  std::map<std::string, ojson> tree_data;  // category key -> <cat>_tree_data.json
};

struct PrepareResult {
  std::vector<std::string> categories;  // compute categories, manifest order
  std::vector<std::string> files;       // every file written, in write order
  ojson manifest;
  ojson gpu_utilization;
};

// Throws std::invalid_argument for a missing sheet (gpu_timeline,
// unified_perf_summary), an arch dict without the needed keys, or an
// unknown category (the message lists the available ones).
PrepareResult prepare_category_data(const std::map<std::string, Table>& perf_tables,
                                    const PrepareOptions& options,
                                    const PrepareInputs& inputs = {});
// The same over tables held elsewhere (a cached report's, shared read-only):
// sheet name -> table, none copied.
using TableRefs = std::map<std::string, const Table*>;
PrepareResult prepare_category_data(const TableRefs& perf_tables, const PrepareOptions& options,
                                    const PrepareInputs& inputs = {});

// Reads every *.csv of a perf_report_csvs directory into tables keyed by
// file stem. Throws std::runtime_error when the directory is missing/empty
// (TraceLens's [DIAG:pipeline:STEP1_FAIL]).
std::map<std::string, Table> read_perf_report_csvs(const std::string& dir);

// The gpu_utilization dict of the manifest, from a gpu_timeline table.
ojson gpu_utilization_from_timeline(const Table& gpu_timeline);

// Arch dict for a platform name ("MI300X") or a path to an arch JSON file.
// Names are looked up in $JARVIS_ARCH_DIR, then <source dir>/arch.
ojson load_arch_json(const std::string& name_or_path);

// Direct kernel time (ms, every kernel counted once under the op that
// launched it) per category key ("gemm", "norm_fwd", ...), from the report's
// ops_summary_by_category: the totals ops_summary, gemm_roofline and
// category_filter give, so they agree. Perf sheets and category_data sum
// subtree kernel time instead (e.g. the dtype casts autocast runs inside a
// GEMM op).
std::map<std::string, double> direct_kernel_time_ms_by_key(const Table& ops_summary_by_category);

// The skill (sub-agent) TraceLens assigns to a category key, as its manifest
// names it ("gemm-analyzer"); category_manifest.json keeps these names.
std::string skill_for_category(const std::string& category_key);

// TraceLens's skill name → the skill jarvis serves as an MCP prompt and ships
// in skills/ ("gemm-analyzer" → "gemm-analysis"). One table for both names:
// the MCP layer resolves a manifest name through it, and tool results give
// the served name beside TraceLens's. Empty for a name TraceLens does not use.
std::string prompt_for_skill(std::string_view tracelens_skill);
// The served prompt for a category key: the prompt of TraceLens's skill,
// except where jarvis has a more specific one (multi_tensor_apply, which
// TraceLens gives the generic skill, gets optimizer-analysis).
std::string prompt_for_category(const std::string& category_key, std::string_view tracelens_skill);
// Every (TraceLens skill, served prompt) pair, in TraceLens-name order.
const std::vector<std::pair<std::string_view, std::string_view>>& skill_prompt_names();

// Path text TraceLens records for a file under output_dir ("./x" → "x").
std::string recorded_path(const std::string& output_dir, const std::string& relative);

}  // namespace jarvis::analysis
