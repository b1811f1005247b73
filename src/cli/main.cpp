#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <string>

#include "cli/commands.h"

namespace {

using Handler = int (*)(const jarvis::cli::Args&);

struct Command {
  Handler run;
  const char* help;
};

const std::map<std::string, Command>& commands() {
  static const std::map<std::string, Command> table = {
      {"info", {jarvis::cli::cmd_info, "info TRACE                      short summary of a trace"}},
      {"prepare",
       {jarvis::cli::cmd_prepare,
        "prepare TRACE --out DIR --platform NAME [--category CAT] [--analyze]  TraceLens agent "
        "category data"}},
      {"analyze",
       {jarvis::cli::cmd_analyze,
        "analyze DIR [--category CAT|all] [--drafts]  category analyses -> <cat>_metrics.json"}},
      {"collectives",
       {jarvis::cli::cmd_collectives,
        "collectives RANK_TRACE... --out DIR [--align end|none] [--overlap] [--xlsx FILE]  "
        "multi-rank collective report"}},
      {"compare",
       {jarvis::cli::cmd_compare,
        "compare REF TARGET --out DIR [--names A B] [--arch-ref X --arch-target Y]  TraceLens "
        "report comparison + hardware gaps"}},
      {"insights",
       {jarvis::cli::cmd_insights,
        "insights TRACE [--arch NAME|FILE|none] [--json FILE]  expert insights, ranked by "
        "recoverable time"}},
      {"report",
       {jarvis::cli::cmd_report,
        "report TRACE --out DIR [--arch NAME|FILE] [--html FILE [--svg-dir DIR]]  TraceLens perf "
        "report CSVs, HTML report with charts"}},
      {"render-findings",
       {jarvis::cli::cmd_render_findings,
        "render-findings OUTPUT_DIR [--out FILE]  one HTML page from the findings markdown"}},
      {"sweep",
       {jarvis::cli::cmd_sweep,
        "sweep DIR --out OUT [--layout P] [--top-k 5] [--jobs N] [--xlsx FILE]  GEMM variance, "
        "timelines and NCCL statistics across the runs of a sweep"}},
      {"sweep-compare",
       {jarvis::cli::cmd_sweep_compare,
        "sweep-compare BASE CAND --out OUT  two sweeps compared per config, noise noted"}},
      {"rocprof-config",
       {jarvis::cli::cmd_rocprof_config,
        "rocprof-config CSV --out FILE.yaml  rocprofv3 job tracing exactly the CSV's kernels"}},
      {"serve",
       {jarvis::cli::cmd_serve,
        "serve --stdio | --http [HOST:]PORT  MCP server (see serve --help)"}},
      {"replay",
       {jarvis::cli::cmd_replay,
        "replay TRACE --out DIR (--uid N.. | --op NAME [--dims D] | --category C [--top N])  op "
        "reproducer package"}},
  };
  return table;
}

void usage() {
  std::fprintf(stderr, "usage: jarvis <command> [options]\n\ncommands:\n");
  for (const auto& [name, cmd] : commands()) std::fprintf(stderr, "  %s\n", cmd.help);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  auto it = commands().find(argv[1]);
  if (it == commands().end()) {
    std::fprintf(stderr, "jarvis: unknown command '%s'\n", argv[1]);
    usage();
    return 2;
  }
  jarvis::cli::Args args(argv + 2, argv + argc);
  try {
    return it->second.run(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jarvis %s: %s\n", argv[1], e.what());
    return 1;
  }
}
