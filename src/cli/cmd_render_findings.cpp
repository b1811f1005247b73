// jarvis render-findings OUTPUT_DIR [--out FILE]
//
// One self-contained HTML page from OUTPUT_DIR/category_findings/*.md and
// system_findings/*.md, with the local SVG/PNG charts they reference embedded.
#include <memory>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "charts/findings_page.h"
#include "cli/commands.h"
#include "cli/options.h"

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
    charts::FindingsPage page = charts::render_findings_page(a->dir);
    write_file_atomic(out, page.html);
    fmt::print("{}: {} findings files, {} images embedded, {} missing, {} refused\n", out,
               page.files.size(), page.images_embedded, page.images_missing.size(),
               page.images_refused.size());
    return 0;
  };
}

}  // namespace jarvis::cli
