// jarvis collectives RANK_TRACE... --out DIR [--xlsx FILE] [--align end|none] [--overlap]
//
// Matches the collective kernels of one trace per rank and writes
// DIR/collective_instances.csv, collective_summary.csv and
// collective_ranks.csv (plus per-rank overlap tables with --overlap). Under
// `mpirun -np N` the rank traces are parsed across the MPI ranks
// (docs/scale-out.md); the outputs are the same bytes.
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/sweep_engine.h"
#include "engine/engine.h"

namespace jarvis::cli {
namespace {

struct CollectivesArgs {
  std::vector<std::string> traces;
  std::string out, xlsx, align = "end";
  bool overlap = false, mkdirs = false, stats = false;
  ProgressFlags progress;
};

engine::CollectiveReportOptions report_options(const CollectivesArgs& a) {
  engine::CollectiveReportOptions options;
  options.alignment =
      a.align == "none" ? engine::TimeAlignment::None : engine::TimeAlignment::CollectiveEnd;
  options.overlap = a.overlap;
  return options;
}

int run_collectives(const CollectivesArgs& a) {
  // Under mpirun the rank traces are analysed across the ranks; rank 0 runs
  // the command, the others serve it.
  SweepEngine engine;
  if (engine.serving_rank()) {
    engine.serve();
    return 0;
  }
  const std::vector<std::string> traces = expand_rank_traces(a.traces);
  check_xlsx_output(a.xlsx, a.mkdirs);
  Progress progress(a.progress.resolve(), "collectives");
  progress.phase(fmt::format("load and match {} rank traces", traces.size()));
  auto result = engine.collective_report(traces, report_options(a));
  progress.phase("write");
  if (a.stats) engine.print_trace_stats(traces.size());
  auto paths = engine.write_dir(a.out, [&](const std::string& dir) {
    return engine::write_collective_tables(result.tables, dir);
  });
  if (!a.xlsx.empty()) engine::write_xlsx(result.tables, a.xlsx);
  progress.finish();
  for (const std::string& path : paths) fmt::print("{}\n", path);
  if (!a.xlsx.empty()) fmt::print("{}\n", a.xlsx);
  if (!result.single_rank) {
    fmt::print("{}, {}\n", count_text(result.report.ranks.size(), "rank"),
               result.report.instances.size());
    fmt::print("{}\n", engine::straggler_verdict(result.report).text);
  }
  return 0;
}

}  // namespace

Runner add_collectives(CLI::App& app) {
  auto a = std::make_shared<CollectivesArgs>();
  CLI::App* cmd =
      app.add_subcommand("collectives",
                         "multi-rank collective report: instances matched across ranks, skew, "
                         "bandwidths, overlap");
  cmd->add_option("RANK_TRACE", a->traces,
                  "one trace per rank (rank from distributedInfo, else the order given), or a "
                  "directory of them")
      ->required();
  cmd->add_option("-o,--out", a->out, "output directory (created)")
      ->check(output_directory())
      ->required();
  cmd->add_option("--align", a->align,
                  "clock alignment: end (synchronising collectives end together) or none "
                  "(ranks share one clock)")
      ->check(CLI::IsMember({"end", "none"}))
      ->default_str("end");
  cmd->add_flag("--overlap", a->overlap,
                "also DIR/rank<R>_collective_overlap_by_op.csv / _by_category.csv");
  cmd->add_option("--xlsx", a->xlsx, "also write the tables to an Excel workbook");
  cmd->add_flag("--mkdirs", a->mkdirs, "create a missing parent directory of --xlsx");
  cmd->add_flag("--stats", a->stats,
                "print peak RSS and traces parsed per process (per MPI rank) to stderr");
  add_progress_flags(cmd, a->progress);
  cmd->footer(
      "Writes DIR/collective_instances.csv, collective_summary.csv, collective_ranks.csv;\n"
      "with a single trace: DIR/rank_collectives.csv (per-kernel bandwidths) and the overlap "
      "tables.");
  return [a] { return run_collectives(*a); };
}

}  // namespace jarvis::cli
