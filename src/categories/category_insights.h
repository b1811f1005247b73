// The rule engine's insights (category_data/insights.json, written by
// prepare) that belong to one category of the agent workflow, and their
// markdown for digests and findings drafts.
#pragma once

#include <string>

#include "categories/category_analysis_common.h"

namespace jarvis::analysis {

// The insights of category_data/insights.json whose category maps to the
// same analysis kind as `category` (gemm, sdpa, norm, ...; trace-wide
// launch-bound insights go to cpu_idle). Empty array when the file is absent.
ojson category_insights(const std::string& output_dir, const std::string& category);

// The health block of the prepared trace (insights/trace_health.h:
// confidence, warnings, ...) from category_data/insights.json; null when the
// directory was prepared without it (from TraceLens's CSVs, or by an older
// jarvis).
ojson prepared_trace_health(const std::string& output_dir);

// Where and why the GPU idled (insights/idle_gaps.h: kernel counts, idle
// time by cause and by place, the largest gaps) from
// category_data/insights.json; null when the directory was prepared without it.
ojson prepared_idle(const std::string& output_dir);

// "## Insights (beyond TraceLens)" section, "" when there are none.
std::string insights_markdown(const ojson& insights);

}  // namespace jarvis::analysis
