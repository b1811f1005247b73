// Internal pieces shared by the category analysis translation units.
#pragma once

#include <string>
#include <vector>

#include "categories/category_analysis.h"

namespace jarvis::analysis::detail {

// analysis_utils targets of the impact estimates: an op with a perf model
// recovers kImpactTargetLow / kImpactTargetHigh of its gap to the roofline
// (low, high: 75 % and 100 % of it); an op without one saves these shares of
// its time (heuristic).
inline constexpr double kImpactTargetLow = 75.0, kImpactTargetMid = 87.5, kImpactTargetHigh = 100.0;
inline constexpr double kHeuristicSavingLow = 0.15, kHeuristicSavingMid = 0.30,
                        kHeuristicSavingHigh = 0.45;

// System analyses (category_analysis_system.cpp). Each returns the metrics
// JSON it would write; the caller writes it.
ojson cpu_idle_metrics(const std::string& output_dir);
ojson multi_kernel_metrics(const std::string& output_dir);
ojson kernel_fusion_metrics(const std::string& output_dir);

std::string perf_csv_dir(const std::string& output_dir);
// Rows of a category ops table in the order of the metrics' operations
// (pandas nlargest on the kernel time sum: NaN rows dropped, ties keep file
// order); every row when the table has no kernel time column. The regimes
// (op_regimes.h) follow the same order.
std::vector<size_t> operation_order(const Table& ops);
// Python's f"{x:.Nf}".
std::string fixed(double x, int digits);

// Markdown digests (category_analysis_markdown.cpp).
std::string compute_markdown(const ojson& metrics);
// `idle`: cpu_idle's prepared_idle (null: the digest has TraceLens's numbers only).
std::string system_markdown(const std::string& category, const ojson& metrics,
                            const ojson& idle = nullptr);
// The "## Where the GPU idled" section of the cpu_idle digest.
std::string idle_markdown(const ojson& idle);

}  // namespace jarvis::analysis::detail
