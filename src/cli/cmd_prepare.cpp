// `jarvis prepare` (TraceLens orchestrator steps 1-5) and `jarvis analyze`
// (category analyses -> <cat>_metrics.json, plus findings drafts).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/options.h"
#include "engine/engine.h"

namespace jarvis::cli {

namespace {

int run_analyses(const std::string& out, const std::string& category, bool drafts, bool quiet) {
  std::vector<std::string> cats =
      category == "all" ? engine::analysis_order(out) : std::vector<std::string>{category};
  if (category == "all") engine::clear_analysis_results(out);
  int failures = 0;
  for (const auto& cat : cats) {
    auto res = engine::analyze_category(out, cat);
    if (res.status == "ERROR") ++failures;
    if (drafts && res.status != "ERROR") {
      std::string path = engine::findings_path(out, cat);
      if (!std::filesystem::exists(path)) {
        // Impact ranges from the critical-path what-if on the prepared trace.
        if (res.status == "OK" && res.kind != "cpu_idle" && res.kind != "multi_kernel" &&
            res.kind != "kernel_fusion")
          res.impact_what_if =
              engine::what_if_impacts(res.metrics, engine::prepared_trace_path(out));
        engine::write_findings(out, cat, engine::draft_findings(res));
      }
    }
    if (!quiet)
      fmt::print("{}\n", res.markdown);
    else
      fmt::print("{:<16} {:<8} {}\n", cat, res.status, res.metrics_path);
  }
  return failures ? 1 : 0;
}

struct PrepareArgs {
  std::string trace, out, platform, category = "all", trace_path;
  bool no_tree_data = false, analyze = false, drafts = false;
  ProgressFlags progress;
};

// The platform named on the command line, else the bundled arch of the GPU
// the trace ran on.
std::string platform_for(const Trace& trace, const std::string& given) {
  if (!given.empty()) return given;
  std::string detected = engine::detect_arch_name(trace);
  if (detected.empty())
    throw UsageError(fmt::format(
        "the trace's GPU ('{}') matches no bundled arch: pass --platform NAME|ARCH.json",
        trace.gpu_name().empty() ? "unknown" : trace.gpu_name()));
  return detected;
}

}  // namespace

Runner add_prepare(CLI::App& app) {
  auto a = std::make_shared<PrepareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "prepare", "TraceLens agent category data: perf_report_csvs/, category_data/, metadata/");
  cmd->add_option("TRACE", a->trace, "Kineto trace (.json/.json.gz)")->required();
  cmd->add_option("-o,--out", a->out, "output directory (created)")
      ->check(output_directory())
      ->required();
  cmd->add_option("--platform", a->platform,
                  "GPU arch name (MI300X, H100, ...) or arch JSON file (default: the trace's GPU)");
  cmd->add_option("--category", a->category, "one category, or all")->default_str("all");
  cmd->add_option("--trace-path", a->trace_path, "trace path recorded in metadata");
  cmd->add_flag("--no-tree-data", a->no_tree_data, "skip category_data/<cat>_tree_data.json");
  cmd->add_flag("--analyze", a->analyze, "also run the category analyses (<cat>_metrics.json)");
  cmd->add_flag("--drafts", a->drafts, "also write first-draft findings where none exist");
  add_progress_flags(cmd, a->progress);
  cmd->footer(
      "Writes perf_report_csvs/, category_data/ (per-category ops CSVs, manifest, multi-kernel\n"
      "data, tree data) and metadata/ as TraceLens's orchestrator does.");
  return [a] {
    Progress progress(a->progress.resolve(), "prepare");
    progress.phase("load");
    // A first load's snapshot is written while the files are prepared; the
    // writer joins before the command returns.
    engine::SnapshotWriteBehind snapshot_writer;
    // Kineto through its loader (snapshot cache); the other formats through
    // the one input dispatch.
    const engine::InputFormat format = engine::detect_input_format(a->trace);
    std::shared_ptr<const Trace> loaded =
        format == engine::InputFormat::KinetoJson
            ? engine::load_trace_write_behind(a->trace, snapshot_writer)
            : std::make_shared<const Trace>(engine::load_non_kineto_input(a->trace, format).trace);
    const Trace& trace = *loaded;
    engine::TracePrepareOptions o;
    o.platform = platform_for(trace, a->platform);
    o.output_dir = a->out;
    o.category = a->category;
    o.trace_path = a->trace_path.empty() ? a->trace : a->trace_path;
    o.tree_data = !a->no_tree_data;
    progress.phase("prepare");
    auto result = engine::prepare_from_trace(trace, o);
    progress.finish();
    fmt::print("prepared {} in {} for {} ({}):",
               count_text(result.categories.size(), "compute category", "compute categories"),
               a->out, o.platform, count_text(result.files.size(), "file"));
    for (const auto& c : result.categories) fmt::print(" {}", c);
    fmt::print("\n");
    if (a->analyze || a->drafts) return run_analyses(a->out, o.category, a->drafts, true);
    return 0;
  };
}

Runner add_analyze(CLI::App& app) {
  struct AnalyzeArgs {
    std::string dir, category = "all";
    bool drafts = false, quiet = false;
  };
  auto a = std::make_shared<AnalyzeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "analyze", "category analyses of a `jarvis prepare` directory -> <cat>_metrics.json");
  cmd->add_option("DIR", a->dir, "directory written by `jarvis prepare`")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--category", a->category, "one category, or all")->default_str("all");
  cmd->add_flag("--drafts", a->drafts, "also write first-draft findings where none exist");
  cmd->add_flag("-q,--quiet", a->quiet, "one status line per category instead of the digest");
  return [a] { return run_analyses(a->dir, a->category, a->drafts, a->quiet); };
}

}  // namespace jarvis::cli
