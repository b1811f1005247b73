// jarvis gate --base RUN... --cand RUN... [--threshold 2] [--alpha 0.05] [--out DIR]
// jarvis gate --baseline NAME --cand RUN...      (a named baseline from the cache)
// jarvis gate --save-baseline NAME --base RUN... (keep the baseline's metrics)
//
// The regression check a CI job runs after each change (docs/sweeps.md,
// "Regression gate"). Exit codes: 0 pass, 3 regression, 1 input error,
// 2 usage error.
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/sweep_engine.h"
#include "engine/engine.h"

namespace jarvis::cli {

Runner add_gate(CLI::App& app) {
  struct GateArgs {
    std::vector<std::string> base, cand;
    std::string baseline, save, out, cache, baseline_dir, layout;
    double threshold = 2.0, alpha = 0.05, min_share = 1.0;
  };
  auto a = std::make_shared<GateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "gate", "regression gate: candidate runs vs baseline runs, exit 3 on a regression");
  cmd->add_option("--base", a->base, "baseline runs: traces, report dirs or sweep directories");
  cmd->add_option("--cand", a->cand, "candidate runs: traces, report dirs or sweep directories");
  cmd->add_option("--baseline", a->baseline, "a named baseline saved with --save-baseline")
      ->excludes(cmd->get_option("--base"));
  cmd->add_option("--save-baseline", a->save, "save the --base runs' metrics under this name");
  cmd->add_option("--threshold", a->threshold,
                  "a slower metric is a regression when its median grows by more than this %")
      ->check(CLI::NonNegativeNumber)
      ->default_str("2");
  cmd->add_option("--alpha", a->alpha, "significance level of the rank test")
      ->check(CLI::Range(1e-6, 0.5))
      ->default_str("0.05");
  cmd->add_option("--min-share", a->min_share,
                  "ops and kernels under this % of the baseline's busy time are not judged")
      ->check(CLI::NonNegativeNumber)
      ->default_str("1");
  cmd->add_option("--layout", a->layout, "layout of sweep directories (default: the seeds')");
  cmd->add_option("--cache", a->cache, "per-run cache directory (none: off)");
  cmd->add_option("--baseline-dir", a->baseline_dir,
                  "where named baselines live (default: <cache dir>/gate_baselines)");
  cmd->add_option("-o,--out", a->out, "also write OUT/gate.csv (created)")
      ->check(output_directory());
  cmd->footer(
      "Each run gives one value per metric (mean step time, GPU-timeline categories, GEMM ops,\n"
      "kernels); a Mann-Whitney test per metric says slower / faster / same, or cannot tell\n"
      "with fewer than 4 runs a side. Exit 3 when a metric is slower beyond --threshold.");
  return [a] {
    engine::SweepLoadOptions o;
    o.pattern = a->layout;
    o.cache_dir = a->cache;
    if (!a->save.empty()) {
      if (a->base.empty()) throw UsageError("--save-baseline needs --base RUN...");
      auto side = engine::gate_side(a->base, o);
      fmt::print("{}\n", engine::save_baseline(a->save, side, a->baseline_dir));
      fmt::print("baseline '{}': {} run(s)\n", a->save, side.runs.size());
      if (a->cand.empty()) return 0;
    }
    if (a->cand.empty()) throw UsageError("give --cand RUN... (and --base RUN... or --baseline)");
    if (a->base.empty() && a->baseline.empty())
      throw UsageError("give --base RUN... or --baseline NAME");
    engine::GateSide base = a->baseline.empty()
                                ? engine::gate_side(a->base, o)
                                : engine::load_baseline(a->baseline, a->baseline_dir);
    engine::GateSide cand = engine::gate_side(a->cand, o);
    engine::GateOptions g;
    g.alpha = a->alpha;
    g.threshold_pct = a->threshold;
    g.min_share_pct = a->min_share;
    engine::GateResult res = engine::gate(base, cand, g);
    fmt::print("{}", engine::gate_summary(res, g));
    if (!a->out.empty()) {
      // The sweep commands' rule for OUT: a directory jarvis wrote, replaced whole.
      SweepEngine writer;
      Table table = engine::gate_table(res);
      for (const auto& f : writer.write_dir(a->out, [&](const std::string& dir) {
             return engine::write_sweep_outputs({table}, dir, "");
           }))
        fmt::print("{}\n", f);
    }
    return res.regression ? 3 : 0;
  };
}

}  // namespace jarvis::cli
