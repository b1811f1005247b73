// `jarvis prepare` (TraceLens orchestrator steps 1-5) and `jarvis analyze`
// (category analyses -> <cat>_metrics.json, plus findings drafts).
#include <fmt/format.h>
#include <cstdio>
#include <filesystem>

#include "analysis/category_analysis.h"
#include "analysis/findings.h"
#include "analysis/prepare_trace.h"
#include "cli/commands.h"
#include "trace/loader.h"

namespace jarvis::cli {

namespace {

int run_analyses(const std::string& out, const std::string& category, bool drafts, bool quiet) {
  std::vector<std::string> cats =
      category == "all" ? analysis::analysis_order(out) : std::vector<std::string>{category};
  int failures = 0;
  for (const auto& cat : cats) {
    auto res = analysis::analyze_category(out, cat);
    if (res.status == "ERROR") ++failures;
    if (drafts && res.status != "ERROR") {
      std::string path = analysis::findings_path(out, cat);
      if (!std::filesystem::exists(path))
        analysis::write_findings(out, cat, analysis::draft_findings(res));
    }
    if (!quiet)
      fmt::print("{}\n", res.markdown);
    else
      fmt::print("{:<16} {:<8} {}\n", cat, res.status, res.metrics_path);
  }
  return failures ? 1 : 0;
}

}  // namespace

int cmd_prepare(const Args& args) {
  auto pos = positionals(args, {"--out", "--platform", "--category", "--trace-path"});
  std::string out = flag_value(args, "--out");
  std::string platform = flag_value(args, "--platform");
  if (pos.size() != 1 || out.empty() || platform.empty()) {
    std::fprintf(
        stderr,
        "usage: jarvis prepare TRACE --out DIR --platform NAME|ARCH.json [--category CAT|all]\n"
        "                      [--trace-path TEXT] [--no-tree-data] [--analyze] [--drafts]\n"
        "  Writes perf_report_csvs/, category_data/ (per-category ops CSVs, manifest,\n"
        "  multi-kernel data, tree data) and metadata/ as TraceLens's orchestrator does.\n"
        "  --analyze also runs the category analyses (<cat>_metrics.json); --drafts writes\n"
        "  first-draft findings files where none exist.\n");
    return 2;
  }
  Trace trace = load_trace(pos[0]);
  analysis::TracePrepareOptions o;
  o.platform = platform;
  o.output_dir = out;
  o.category = flag_value(args, "--category").empty() ? "all" : flag_value(args, "--category");
  o.trace_path =
      flag_value(args, "--trace-path").empty() ? pos[0] : flag_value(args, "--trace-path");
  o.tree_data = !has_flag(args, "--no-tree-data");
  auto result = analysis::prepare_from_trace(trace, o);
  fmt::print("prepared {} compute categories in {} ({} files):", result.categories.size(), out,
             result.files.size());
  for (const auto& c : result.categories) fmt::print(" {}", c);
  fmt::print("\n");
  if (has_flag(args, "--analyze") || has_flag(args, "--drafts"))
    return run_analyses(out, o.category, has_flag(args, "--drafts"), true);
  return 0;
}

int cmd_analyze(const Args& args) {
  auto pos = positionals(args, {"--category"});
  if (pos.size() != 1) {
    std::fprintf(stderr,
                 "usage: jarvis analyze DIR [--category CAT|all] [--drafts] [--quiet]\n"
                 "  Runs the category analyses on a directory written by `jarvis prepare`, writes\n"
                 "  category_data/<cat>_metrics.json and prints the markdown digest.\n");
    return 2;
  }
  std::string cat = flag_value(args, "--category").empty() ? "all" : flag_value(args, "--category");
  return run_analyses(pos[0], cat, has_flag(args, "--drafts"), has_flag(args, "--quiet"));
}

}  // namespace jarvis::cli
