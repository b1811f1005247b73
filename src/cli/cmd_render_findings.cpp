// jarvis render-findings OUTPUT_DIR [--out FILE]
//
// One self-contained HTML page from OUTPUT_DIR/category_findings/*.md and
// system_findings/*.md, with the local SVG/PNG charts they reference embedded.
//
// jarvis final-report OUTPUT_DIR
//
// The checked findings ranked by recoverable time: OUTPUT_DIR/final_report.md
// and final_report.json (the final_report MCP tool's files).
#include <memory>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "engine/engine.h"

namespace jarvis::cli {

Runner add_render_findings(CLI::App& app) {
  struct RenderArgs {
    std::string dir, out;
    bool mkdirs = false;
  };
  auto a = std::make_shared<RenderArgs>();
  CLI::App* cmd =
      app.add_subcommand("render-findings", "one HTML page from the findings markdown files");
  cmd->add_option("OUTPUT_DIR", a->dir, "analysis output directory (category_findings/, ...)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("-o,--out", a->out, "HTML file (default: OUTPUT_DIR/findings.html)");
  cmd->add_flag("--mkdirs", a->mkdirs, "create a missing parent directory of --out");
  cmd->footer(
      "Renders OUTPUT_DIR/category_findings/*.md and system_findings/*.md; local .svg/.png\n"
      "images are embedded.");
  return [a] {
    std::string out = a->out.empty() ? a->dir + "/findings.html" : a->out;
    check_output_parent(a->out, a->mkdirs, "--out");
    engine::FindingsPage page = engine::render_findings_page(a->dir);
    write_file_atomic(out, page.html);
    fmt::print("{}: {}, {} embedded, {} missing, {} refused\n", out,
               count_text(page.files.size(), "findings file"),
               count_text(page.images_embedded, "image"), page.images_missing.size(),
               page.images_refused.size());
    return 0;
  };
}

Runner add_final_report(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "final-report", "checked findings ranked by recoverable time -> final_report.md/.json");
  cmd->add_option("OUTPUT_DIR", *dir, "analysis output directory (category_findings/, ...)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->footer(
      "Checks every OUTPUT_DIR/category_findings/*.md and system_findings/*.md (the\n"
      "write_findings check), ranks the P-items of those that pass by impact, and writes\n"
      "OUTPUT_DIR/final_report.md and final_report.json; files that fail are listed.");
  return [dir] {
    engine::FinalReport report = engine::build_final_report(*dir);
    auto files = engine::write_final_report(report);
    fmt::print("{}: {}, {}, {} left out\n", files[0],
               count_text(report.ranked.size(), "ranked recommendation"),
               count_text(report.system.size(), "system finding"),
               count_text(report.skipped.size(), "findings file"));
    return 0;
  };
}

}  // namespace jarvis::cli
