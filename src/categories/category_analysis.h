// Category analyses of the TraceLens agent workflow (steps 6/7): read ONLY
// the prepared files of an output directory (category_data/, metadata/,
// perf_report_csvs/) and write category_data/<cat>_metrics.json with the
// same keys and numbers TraceLens's category_analyses/<kind>_analysis.py
// scripts produce (standalone scope), plus a markdown digest for an LLM:
// operations breakdown, rule-flagged bottlenecks, key metrics.
//
// Which script logic runs is decided by the category key:
//   gemm / groupedgemm_*          -> gemm        sdpa_* / inferenceattention -> sdpa
//   elementwise                   -> elementwise reduce                      -> reduce
//   norm / norm_* / rmsnorm       -> norm        convolution / conv_*        -> convolution
//   triton                        -> triton      moe_fused / moe_unfused     -> moe
//   cpu_idle, multi_kernel, kernel_fusion -> their system analyses
//   anything else (other, communication, ...) -> other (generic)
#pragma once

#include <string>
#include <vector>

#include "categories/category_analysis_common.h"

namespace jarvis::analysis {

struct AnalyzeResult {
  std::string category;
  std::string kind;                 // script logic used: gemm, sdpa, other, cpu_idle, ...
  std::string status;               // OK, SUCCESS, NO_DATA or ERROR (as in the JSON)
  std::string metrics_path;         // the file written
  ojson metrics;                    // its content
  std::string markdown;             // digest for the caller
  ojson insights = ojson::array();  // category_data/insights.json entries of this category
  // Impact ranges from the critical-path what-if (what_if_impact.h), when the
  // caller computed them; null otherwise.
  ojson impact_what_if;
  // Regimes of the ops (categories/op_regimes.h) for a compute category with
  // data; null otherwise. Not part of the TraceLens metrics file.
  ojson regimes;
  // cpu_idle: where and why the GPU idled (categories/category_insights.h
  // prepared_idle), null otherwise or when the directory has none. Not part
  // of the TraceLens metrics file.
  ojson idle;
};

// Runs one category analysis and writes its metrics file atomically.
// Throws std::invalid_argument for a bad category name or a missing
// output_dir; missing inputs produce the TraceLens ERROR / NO_DATA metrics
// (status field) instead of an exception.
AnalyzeResult analyze_category(const std::string& output_dir, const std::string& category);

// Removes category_data/*_metrics.json before a run of every analysis: the
// compute categories read kernel_fusion_metrics.json when it is there (its
// high-confidence kernels flag their operations), so without this a second
// `analyze all` would differ from the first, which ran before it existed.
void clear_analysis_results(const std::string& output_dir);

// Categories `analyze all` runs, in order: the compute categories of the
// manifest, moe_fused (always: TraceLens's moe_analysis.py, run for its
// default bucket, writes a NO_DATA metrics file when the trace has no MoE
// ops), then cpu_idle, multi_kernel and kernel_fusion. The last two run
// whenever their input (multi_kernel_data.json, fusion_candidates.json) is
// there, also when the manifest leaves them out (no memcpy or collective, no
// fusion candidate): their TraceLens scripts then still write SUCCESS /
// NO_DATA metrics. Analyses whose only outcome would be an input-missing
// ERROR (a compute category without ops) are not run. Compute categories come
// first because TraceLens's reference runs did so (kernel_fusion_metrics.json
// would otherwise mark their operations fusion_flagged).
std::vector<std::string> analysis_order(const std::string& output_dir);

// The script logic name for a category key (see the table above).
std::string analysis_kind(const std::string& category);

// Rendering helpers shared with the findings drafts.
std::string format_args(const Cell* input_dims, const Cell* input_type);
std::string classify_kernel_library(const std::string& op_name, const std::string& kernel_details);

}  // namespace jarvis::analysis
