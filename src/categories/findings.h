// Category findings files (category_findings/<cat>_findings.md and, for the
// system analyses cpu_idle / multi_kernel / kernel_fusion,
// system_findings/<cat>_findings.md): a safe writer for what an LLM wrote,
// and a first rule-based draft from <cat>_metrics.json following the seed
// findings template (overview, key bottlenecks with time / share /
// efficiency / issue / Path A / Path B / priority, additional notes).
#pragma once

#include <string>

#include "categories/category_analysis.h"
#include "categories/category_analysis_common.h"

namespace jarvis::analysis {

// Path of a category's findings file under output_dir.
std::string findings_path(const std::string& output_dir, const std::string& category);

// Writes the markdown atomically and returns the path. Throws
// std::invalid_argument for a bad category name (only [a-z0-9_]), an
// output_dir that does not exist, empty or oversized (> 1 MiB) markdown, or a
// destination that resolves outside output_dir (symlinked subdirectory).
std::string write_findings(const std::string& output_dir, const std::string& category,
                           const std::string& markdown);

// Draft findings for a category's metrics JSON (compute categories; system
// ones get a short summary). `display_name` defaults to the category key.
// With `what_if` (what_if_impacts' result) each key bottleneck gets an impact
// estimate line saying which method gave it: the critical-path what-if, or
// the trace time share when no graph could be built.
// With `regimes` (category_regimes) each key bottleneck gets a "Regime" line:
// latency-bound ops and the kernel time tuning could still save.
std::string draft_findings(const std::string& category, const ojson& metrics,
                           const std::string& display_name = "", const ojson& what_if = ojson(),
                           const ojson& regimes = ojson());

// The draft of an analysis result: draft_findings of its metrics followed by
// the category's insights (beyond TraceLens), when there are any.
std::string draft_findings(const AnalyzeResult& result);

}  // namespace jarvis::analysis
