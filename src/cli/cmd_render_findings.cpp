// jarvis render-findings OUTPUT_DIR [--out FILE]
//
// One self-contained HTML page from OUTPUT_DIR/category_findings/*.md and
// system_findings/*.md, with the local SVG/PNG charts they reference embedded.
#include <cstdio>

#include <fmt/format.h>

#include "charts/findings_page.h"
#include "cli/commands.h"
#include "report/table.h"

namespace jarvis::cli {

namespace {
constexpr const char* kUsage =
    "usage: jarvis render-findings OUTPUT_DIR [--out FILE]\n"
    "renders OUTPUT_DIR/category_findings/*.md and system_findings/*.md into one HTML page\n"
    "(default FILE: OUTPUT_DIR/findings.html); local .svg/.png images are embedded\n";
}  // namespace

int cmd_render_findings(const Args& args) {
  if (has_flag(args, "--help") || has_flag(args, "-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  auto pos = positionals(args, {"--out"});
  bool bad_option = false;
  for (size_t k = 0; k < args.size(); ++k)
    if (args[k] == "--out")
      ++k;
    else if (args[k].rfind("--", 0) == 0)
      bad_option = true;
  if (pos.size() != 1 || bad_option ||
      (has_flag(args, "--out") && flag_value(args, "--out").empty())) {
    std::fprintf(stderr, "jarvis render-findings: expected OUTPUT_DIR [--out FILE]\n%s", kUsage);
    return 2;
  }
  std::string out = has_flag(args, "--out") ? flag_value(args, "--out") : pos[0] + "/findings.html";
  charts::FindingsPage page = charts::render_findings_page(pos[0]);
  write_file_atomic(out, page.html);
  fmt::print("{}: {} findings files, {} images embedded, {} missing, {} refused\n", out,
             page.files.size(), page.images_embedded, page.images_missing.size(),
             page.images_refused.size());
  return 0;
}

}  // namespace jarvis::cli
