// The final report of the agent workflow: every category's checked findings
// (category_findings/*.md, system_findings/*.md) assembled into one list
// ranked by recoverable time, with evidence links, as markdown and JSON.
//
// A findings file enters only when it passes validate_findings
// (findings_check.h); the others are listed with their problems. Compute
// P-items are ranked by their impact mid value (% of end-to-end time, copied
// from category_findings) capped by the tuning headroom the draft's Regime
// line records (`<!-- tuning-headroom pct=X -->`), turned into milliseconds
// with the trace's total time when cpu_idle_metrics.json has it, and capped by the what-if
// saving the draft records (`<!-- what-if-saving pct=X -->`); system P-items with a step
// saving (`<!-- step-saving us_total=X -->`, drafted from the trace-level insights) rank
// with them by that saving; other system P-items (impact not quantifiable from trace
// data) follow, in category order.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace jarvis::analysis {

struct FinalReportItem {
  std::string category;
  std::string tier;  // compute | system
  int p_item = 0;    // N of `### P<N>` in the findings file
  std::string title;
  std::optional<double> impact_low, impact_mid, impact_high;  // % of end-to-end time
  // The draft's "Regime" line: % of end-to-end time kernel tuning can still
  // save (latency-bound ops only down to the latency floor; op_regimes.h).
  std::optional<double> tuning_headroom_pct;
  // The draft's `<!-- what-if-saving pct=X -->`: % of the step time the
  // P-item's ops save at their efficiency target on the dependency graph.
  std::optional<double> what_if_saving_pct;
  // Ranking value: impact_mid, capped by tuning_headroom_pct when present (a
  // latency-bound op cannot be tuned below the floor, whatever TraceLens's
  // roofline-based impact says).
  std::optional<double> recoverable_pct;
  // A system P-item's `<!-- step-saving us_total=X -->` (its insight's
  // what-if on the un-profiled step, over the trace's steps), in ms: its
  // ranking value (recoverable_ms; recoverable_pct of the trace's time).
  std::optional<double> step_saving_ms;
  std::string
      recoverable_basis;  // "impact mid" | "latency floor cap" | "what-if cap" | "step saving"
  std::optional<double> recoverable_ms;  // recoverable_pct x total time
  std::string findings_path;             // relative to output_dir
  std::vector<std::string> evidence;     // relative paths that exist
};

struct FinalReportSkipped {
  std::string category;
  std::string findings_path;
  std::vector<std::string> problems;
};

struct FinalReport {
  std::string output_dir;
  std::optional<double> total_time_ms;
  std::vector<FinalReportItem>
      ranked;  // compute items and system items with a step saving, largest recoverable time first
  std::vector<FinalReportItem> system;  // system items without a step saving, not quantifiable
  std::vector<FinalReportSkipped> skipped;
  size_t findings_files = 0;
  // The prepared trace's health (category_insights.h prepared_trace_health),
  // null when unknown; its warnings head the markdown.
  nlohmann::json trace_health;
  std::string markdown;
  nlohmann::json to_json() const;
};

// Reads and checks the findings under output_dir. Throws std::invalid_argument
// when output_dir does not exist or holds no findings file at all.
FinalReport build_final_report(const std::string& output_dir);

// Writes output_dir/final_report.md and final_report.json atomically; returns
// their paths.
std::vector<std::string> write_final_report(const FinalReport& report);

}  // namespace jarvis::analysis
