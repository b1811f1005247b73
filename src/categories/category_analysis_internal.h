// Internal pieces shared by the category analysis translation units.
#pragma once

#include <string>

#include "categories/category_analysis.h"

namespace jarvis::analysis::detail {

// System analyses (category_analysis_system.cpp). Each returns the metrics
// JSON it would write; the caller writes it.
ojson cpu_idle_metrics(const std::string& output_dir);
ojson multi_kernel_metrics(const std::string& output_dir);
ojson kernel_fusion_metrics(const std::string& output_dir);

std::string perf_csv_dir(const std::string& output_dir);
// Python's f"{x:.Nf}".
std::string fixed(double x, int digits);

// Markdown digests (category_analysis_markdown.cpp).
std::string compute_markdown(const ojson& metrics);
std::string system_markdown(const std::string& category, const ojson& metrics);

}  // namespace jarvis::analysis::detail
