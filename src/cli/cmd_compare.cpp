// jarvis compare REF TARGET --out DIR [options]
//
// TraceLens report comparison of two traces (or report directories), plus
// the hardware-expected ratios of the matched ops. REF is the reference,
// TARGET the platform to improve.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "engine/engine.h"

namespace jarvis::cli {
namespace {

struct CompareArgs {
  std::string reference, target;
  std::vector<std::string> names;
  std::vector<std::string> sheets = {"all"};
  std::string merge_order = "first-appearance";
  double min_share_pct = 1;
  size_t top = 10;
  CompareTracesOptions options;
};

void print_timeline(const nlohmann::json& summary) {
  if (!summary["gpu_timeline"].is_array()) return;
  fmt::print("\ngpu_timeline (ms)        {:>12} {:>12} {:>9}\n",
             summary["reference"]["tag"].get<std::string>(),
             summary["target"]["tag"].get<std::string>(), "diff %");
  for (const auto& row : summary["gpu_timeline"]) {
    auto num = [](const nlohmann::json& j) { return j.is_number() ? j.get<double>() : NAN; };
    fmt::print("  {:<22} {:>12.4f} {:>12.4f} {:>9.2f}\n", row["type"].get<std::string>(),
               num(row["reference_ms"]), num(row["target_ms"]), num(row["diff_pct"]));
  }
}

// The ops whose kernel time changed most (ops_summary's rows, by the size of
// the change): what the comparison is about, next to the timeline split.
void print_op_changes(const nlohmann::json& summary, size_t top) {
  const auto& ops = summary["ops_summary"];
  if (!ops.is_array() || ops.empty()) return;
  std::vector<const nlohmann::json*> rows;
  for (const auto& row : ops)
    if (row["diff_ms"].is_number()) rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(), [](const nlohmann::json* a, const nlohmann::json* b) {
    return std::fabs((*a)["diff_ms"].get<double>()) > std::fabs((*b)["diff_ms"].get<double>());
  });
  if (rows.size() > top) rows.resize(top);
  auto num = [](const nlohmann::json& j) { return j.is_number() ? j.get<double>() : NAN; };
  fmt::print("\nlargest op changes (kernel ms)  {:>12} {:>12} {:>10} {:>9}\n",
             summary["reference"]["tag"].get<std::string>(),
             summary["target"]["tag"].get<std::string>(), "diff", "diff %");
  for (const auto* row : rows)
    fmt::print("  {:<30} {:>12.3f} {:>12.3f} {:>+10.3f} {:>+9.1f}\n",
               (*row)["name"].get<std::string>().substr(0, 30), num((*row)["reference_ms"]),
               num((*row)["target_ms"]), num((*row)["diff_ms"]), num((*row)["diff_pct"]));
}

void print_gaps(const nlohmann::json& summary) {
  const auto& gaps = summary["hardware_gaps"];
  if (!gaps.is_object()) return;
  fmt::print(
      "\nhardware-expected ratios ({} -> {}): HBM time ratio {:.3f}; {} matched ops, {} to "
      "investigate on the target (measured/expected > {}, >= {}% of target time)\n",
      gaps["reference"]["arch"]["name"].get<std::string>(),
      gaps["target"]["arch"]["name"].get<std::string>(),
      gaps["hbm_time_ratio"].is_number() ? gaps["hbm_time_ratio"].get<double>() : NAN,
      gaps["matched_ops"].get<size_t>(), gaps["flagged_count"].get<size_t>(),
      gaps["thresholds"]["gap_threshold"].get<double>(),
      gaps["thresholds"]["min_target_share_pct"].get<double>());
  for (const auto& op : gaps["flagged"])
    fmt::print("  {:5.1f}% of target  {} {}\n      {}\n", op["target_share_pct"].get<double>(),
               op["name"].get<std::string>(), op["input_dims"].get<std::string>(),
               op["why"].get<std::string>());
}

int run_compare(CompareArgs& a) {
  a.options.compare.sheet_groups = a.sheets;
  a.options.compare.merge_order = a.merge_order == "lexicographic"
                                      ? engine::MergeOrder::Lexicographic
                                      : engine::MergeOrder::FirstAppearance;
  a.options.gaps.min_target_share = a.min_share_pct / 100.0;
  if (a.names.size() == 2) {
    a.options.reference_tag = a.names[0];
    a.options.target_tag = a.names[1];
  }
  TraceComparison c = engine::compare_traces(a.reference, a.target, a.options);
  for (const auto& f : c.files) fmt::print("{}\n", f);
  for (const auto& n : c.notes) fmt::print("note: {}\n", n);
  auto summary = c.summary(a.top);
  if (summary["verdict"].is_object())
    fmt::print("{}\n", summary["verdict"]["text"].get<std::string>());
  if (summary["step_views"].is_object())
    fmt::print("{}\n", summary["step_views"]["verdict"]["text"].get<std::string>());
  print_timeline(summary);
  print_op_changes(summary, a.top);
  print_gaps(summary);
  return 0;
}

}  // namespace

Runner add_compare(CLI::App& app) {
  auto a = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "TraceLens report comparison of two runs plus hardware-expected gaps");
  cmd->add_option("REF", a->reference,
                  "reference: a trace (Kineto .json/.json.gz, rocprofv3), a report directory "
                  "(<sheet>.csv files, or one holding perf_report_csvs/) or a report .xlsx; "
                  "PyTorch-style or kernel-only")
      ->required();
  cmd->add_option("TARGET", a->target, "target: the platform to improve (same kinds)")->required();
  cmd->add_option("-o,--out", a->options.output_dir,
                  "writes DIR/<sheet>.csv per comparison sheet and "
                  "DIR/hardware_gap_analysis.{csv,json} when both archs are known")
      ->check(output_directory())
      ->required();
  cmd->add_option("--names", a->names, "column tags REF_TAG TARGET_TAG (default: reference target)")
      ->expected(2);
  cmd->add_option("--arch-ref", a->options.arch_reference,
                  "reference GPU arch: name, JSON file or none (default: detected from the trace)");
  cmd->add_option("--arch-target", a->options.arch_target, "target GPU arch (same)");
  cmd->add_option("--sheets", a->sheets, "sheet groups, comma-separated")
      ->delimiter(',')
      ->check(CLI::IsMember(engine::compare_sheet_groups()))
      ->default_str("all");
  cmd->add_option("--merge-order", a->merge_order,
                  "row order of merged sheets: first-appearance (pandas < 2.2) or lexicographic")
      ->check(CLI::IsMember({"first-appearance", "lexicographic"}))
      ->default_str("first-appearance");
  cmd->add_option("--gap-threshold", a->options.gaps.gap_threshold,
                  "flag ops whose measured/expected ratio exceeds X")
      ->check(CLI::NonNegativeNumber)
      ->default_str("1.2");
  cmd->add_option("--min-share-pct", a->min_share_pct,
                  "...and whose target time is >= P% of the target")
      ->check(CLI::Range(0.0, 100.0))
      ->default_str("1");
  cmd->add_option("--top", a->top, "flagged ops printed")->default_str("10");
  cmd->add_option(
         "--iteration", a->options.iteration,
         "Nsight Systems captures: the iteration (by index) of the per-iteration step view")
      ->default_str("0");
  cmd->add_option("--iterations", a->options.iterations,
                  "how the step view finds iterations: auto (ProfilerStep#N, else repeats, else "
                  "GPU idle gaps), profiler_step, detected_repeats or gpu_idle_gaps")
      ->check(CLI::IsMember({"auto", "profiler_step", "detected_repeats", "gpu_idle_gaps"}))
      ->default_str("auto");
  cmd->footer(
      "The sheets both sides have are compared (notes name the rest); inputs may mix kinds.\n"
      "TraceLens's own comparisons use --merge-order lexicographic (pandas >= 2.2). "
      "docs/compare.md");
  return [a] { return run_compare(*a); };
}

}  // namespace jarvis::cli
