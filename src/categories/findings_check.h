// Checks a category findings markdown before it is stored: the structure
// TraceLens's report validator (TraceLens/Agent/Analysis/utils/
// validation_utils.py, validate_findings_file; ../shared/spec/agent-outputs.md
// sections 6 and 7) expects, and the numbers against the category's
// <cat>_metrics.json.
//
// Rules (each problem names its rule and the fix):
//  S1 `## Recommendations`, then `## Detailed Analysis` after it.
//  S2 P-items under Recommendations: `### P<N>: <title>` numbered 1, 2, ...; a
//     compute P-item's title ends with `(<library>)` when its
//     category_findings entry names a library other than Unknown.
//  S3 each P-item has `**Insight**`, `**Action**` and an impact block
//     `<!-- impact-begin kind=p_item low=.. mid=.. high=.. -->` ... `<!-- impact-end -->`.
//  S4 one `<!-- reasoning-candidate tier=compute|system rank=<N> -->` block
//     per P-item (ranks 1..N, the category's tier) with `#### <title>` and the
//     labels Identification, Data, Reasoning for Slowdown, Resolution,
//     Impact estimate; compute blocks add
//     `<!-- impact-begin kind=detail_estimate low=.. high=.. -->`.
//  N1 compute impact numbers equal category_findings[N-1]'s impact_score_low /
//     impact_score / impact_score_high within 0.005 (TraceLens's marker
//     tolerance); a P-item beyond category_findings is invented. System
//     P-items say low=null mid=null high=null.
//  N2 Data tables: the header is TraceLens's column list (standalone or
//     comparative); every row names an operation of the category's data, and
//     its Time (ms), %E2E and Count match one of that operation's rows
//     (within the rounding of the cited number).
//  E1 `Status: ERROR` only when the analysis status is ERROR (then the file
//     may be just that and the error text).
#pragma once

#include <string>
#include <vector>

#include "categories/category_analysis_common.h"

namespace jarvis::analysis {

struct FindingsValidation {
  std::vector<std::string> problems;  // "<rule>: what is wrong; how to fix it"
  std::vector<std::string> warnings;  // worth a look, not refused
  size_t p_items = 0;
  size_t data_rows_checked = 0;
  bool metrics_found = false;  // the category's <cat>_metrics.json was there to check against
  bool valid() const { return problems.empty(); }
  nlohmann::json to_json() const;
};

// `metrics`: the category's metrics JSON, or null when there is none (the
// number checks are then skipped and a warning says so).
FindingsValidation validate_findings(const std::string& category, const std::string& markdown,
                                     const ojson& metrics);

// The same, reading output_dir/category_data/<category>_metrics.json.
FindingsValidation validate_findings_in(const std::string& output_dir, const std::string& category,
                                        const std::string& markdown);

}  // namespace jarvis::analysis
