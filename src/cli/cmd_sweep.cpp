// jarvis sweep DIR --out OUT [--layout P] [--top-k 5] [--jobs N] [--cache DIR|none] [--xlsx FILE]
// jarvis sweep-compare BASE CAND --out OUT [--layout P] [--base-layout P --cand-layout P] ...
// jarvis rocprof-config CSV --out FILE.yaml
//
// Sweep outputs are described in docs/sweeps.md. Progress (runs done / total,
// ETA) goes to stderr, results to stdout.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/sweep_engine.h"
#include "engine/engine.h"

namespace jarvis::cli {
namespace {

constexpr const char* kLayoutHelp =
    "run pattern with named fields, e.g. "
    "'runs/bs{batch}_ch{channels}/torch_profiler/rank{rank}/*.json.gz' (default: "
    "{threads}thread/nccl_{channel}channels/torch_profiler/rank{rank}/*.json*, then TraceLens "
    "report directories {threads}thread/perf_{channel}ch_rank{rank}_perf_report_csvs)";

// Options shared by sweep and sweep-compare.
struct LoadArgs {
  std::string layout, cache;
  size_t jobs = 0;
  bool mkdirs = false, stats = false;
  ProgressFlags progress;
};

void add_load_options(CLI::App* cmd, LoadArgs& a) {
  cmd->add_option("--layout", a.layout, kLayoutHelp);
  cmd->add_option("--jobs", a.jobs, "runs analysed in parallel (default: cores)")
      ->check(CLI::PositiveNumber);
  cmd->add_option(
      "--cache", a.cache,
      "per-run cache directory (default: the user cache, ~/.cache/jarvis/sweeps; none: off)");
  cmd->add_flag("--mkdirs", a.mkdirs, "create missing parent directories of --xlsx/--html");
  cmd->add_flag("--stats", a.stats,
                "print peak RSS, runs parsed and cache hits per process (per MPI rank) to stderr");
  add_progress_flags(cmd, a.progress);
}

engine::SweepLoadOptions load_options(const LoadArgs& a, const std::string& layout,
                                      Progress& progress) {
  engine::SweepLoadOptions o;
  o.pattern = layout.empty() ? a.layout : layout;
  o.jobs = a.jobs;
  o.cache_dir = a.cache;
  o.progress = [&progress](size_t done, size_t total, const std::string&) {
    progress.count(done, total, "runs");
    return true;
  };
  return o;
}

engine::Sweep load(SweepEngine& engine, const std::string& dir, const LoadArgs& a,
                   const std::string& layout, Progress& progress) {
  progress.phase("load " + dir);
  return engine.load(dir, load_options(a, layout, progress));
}

// OUT's CSVs (whole, under MPI), then the workbook; prints every path. With
// a cache, OUT also gets the manifest that reopens the sweep from it (not
// printed: it is no output table).
void write_tables(SweepEngine& engine, const std::vector<Table>& tables, const std::string& out,
                  const std::string& xlsx, const engine::Sweep* manifest_of = nullptr) {
  auto written = engine.write_dir(out, [&](const std::string& dir) {
    auto files = engine::write_sweep_outputs(tables, dir, "");
    if (manifest_of && !manifest_of->cache_dir.empty())
      write_file_atomic((std::filesystem::path(dir) / engine::kSweepManifest).string(),
                        engine::sweep_manifest_json(*manifest_of));
    return files;
  });
  if (!xlsx.empty()) {
    engine::write_xlsx(tables, xlsx);
    written.push_back(xlsx);
  }
  for (const auto& path : written) fmt::print("{}\n", path);
}

// The summary line is progress-like (left out with --quiet); failures and
// warnings always go out.
void report_load(const engine::Sweep& s, bool quiet) {
  if (!quiet)
    std::fprintf(stderr, "sweep %s: %zu runs (%zu from cache), layout %s\n", s.root.c_str(),
                 s.runs.size(), s.cache_hits, s.layout.pattern.c_str());
  if (!s.cache_warning.empty()) std::fprintf(stderr, "warning: %s\n", s.cache_warning.c_str());
  for (const auto& f : s.failures)
    std::fprintf(stderr, "failed run: %s: %s\n", f.path.c_str(), f.reason.c_str());
}

std::string dir_label(const std::string& dir) {
  std::filesystem::path p = std::filesystem::path(dir).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

struct SweepArgs {
  std::string dir, out, xlsx, svg_dir, html;
  size_t top_k = 5;
  engine::KernelChangeOptions kernels;
  LoadArgs load;
};

int run_sweep(const SweepArgs& a) {
  SweepEngine engine;
  if (engine.serving_rank()) {
    engine.serve();
    return 0;
  }
  check_xlsx_output(a.xlsx, a.load.mkdirs);
  check_output_parent(a.html, a.load.mkdirs, "--html");
  bool quiet = a.load.progress.resolve() == ProgressMode::None;
  Progress progress(a.load.progress.resolve(), "sweep");
  engine::Sweep s = load(engine, a.dir, a.load, "", progress);
  progress.phase("tables");
  auto tables = engine::sweep_tables(s, a.top_k, a.kernels);
  progress.finish();
  report_load(s, quiet);
  // The key numbers of the per-kernel attribution (what_changed_kernels.csv):
  // a result, not progress, so only --quiet leaves it out.
  if (!a.load.progress.quiet) {
    std::string why = engine::kernel_changes_empty_reason(s);
    for (const Table& t : tables)
      if (t.name == "what_changed_kernels")
        std::fprintf(stderr, "%s\n",
                     why.empty() ? engine::kernel_changes_summary(t).c_str()
                                 : fmt::format("kernel changes: {}", why).c_str());
    // An empty nccl_by_config.csv is only a header: say why beside it.
    if (std::string none = engine::nccl_empty_reason(s); !none.empty())
      std::fprintf(stderr, "nccl_by_config.csv: no rows: %s\n", none.c_str());
  }
  if (a.load.stats) engine.print_stats({&s});
  write_tables(engine, tables, a.out, a.xlsx, &s);
  if (!a.svg_dir.empty())
    for (const auto& path : engine::write_variance_svgs(s, tables.front(), a.svg_dir))
      fmt::print("{}\n", path);
  if (!a.html.empty()) {
    write_file_atomic(a.html, engine::sweep_html_page(s, tables));
    fmt::print("{}\n", a.html);
  }
  return 0;
}

struct SweepCompareArgs {
  std::string base, cand, out, base_layout, cand_layout, xlsx, html;
  std::vector<std::string> labels;
  LoadArgs load;
};

int run_sweep_compare(const SweepCompareArgs& a) {
  SweepEngine engine;
  if (engine.serving_rank()) {
    engine.serve();
    return 0;
  }
  check_xlsx_output(a.xlsx, a.load.mkdirs);
  check_output_parent(a.html, a.load.mkdirs, "--html");
  bool quiet = a.load.progress.resolve() == ProgressMode::None;
  Progress progress(a.load.progress.resolve(), "sweep-compare");
  engine::Sweep base = load(engine, a.base, a.load, a.base_layout, progress);
  engine::Sweep cand = load(engine, a.cand, a.load, a.cand_layout, progress);
  progress.phase("compare");
  auto comparison = engine::compare_sweeps(base, cand);
  progress.finish();
  report_load(base, quiet);
  report_load(cand, quiet);
  if (a.load.stats) engine.print_stats({&base, &cand});
  write_tables(engine, comparison, a.out, a.xlsx);
  if (!a.html.empty()) {
    std::string left = a.labels.size() == 2 ? a.labels[0] : dir_label(a.base);
    std::string right = a.labels.size() == 2 ? a.labels[1] : dir_label(a.cand);
    write_file_atomic(a.html, engine::sweep_compare_html_page(base, cand, comparison, left, right));
    fmt::print("{}\n", a.html);
  }
  return 0;
}

}  // namespace

Runner add_sweep(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "GEMM variance, timelines and NCCL statistics across the runs of a sweep");
  cmd->add_option("DIR", a->dir, "sweep root (traces, TraceLens perf_report_csvs dirs or .xlsx)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("-o,--out", a->out, "output directory (created)")
      ->check(output_directory())
      ->required();
  cmd->add_option("--top-k", a->top_k, "GEMM rows per run in gemm_variance")
      ->check(CLI::PositiveNumber)
      ->default_str("5");
  cmd->add_option("--top-kernels", a->kernels.top_n,
                  "kernels per configuration in what_changed_kernels")
      ->check(CLI::PositiveNumber)
      ->default_str("5");
  cmd->add_option("--reference", a->kernels.reference,
                  "reference configuration of what_changed_kernels, as its full_config label "
                  "('threads=256 channel=28'; default: the median configuration by normalised "
                  "time)");
  cmd->add_option("--xlsx", a->xlsx, "also write every table as a sheet of one workbook");
  cmd->add_option("--svg-dir", a->svg_dir,
                  "also the variance plots (box / violin per field, interaction) as SVG")
      ->check(output_directory());
  cmd->add_option("--html", a->html,
                  "one self-contained HTML page: variance plots, timeline and NCCL by config");
  add_load_options(cmd, a->load);
  cmd->footer(
      "Writes OUT/gemm_variance.csv, gemm_variance_by_kernel.csv, gemm_variance_timestamps.csv,\n"
      "gemm_variance_coll_overlap.csv, gpu_timeline_*.csv, what_changed.csv,\n"
      "what_changed_kernels.csv, nccl_by_config.csv, run_health.csv, failed_runs.csv\n"
      "(docs/sweeps.md).");
  return [a] { return run_sweep(*a); };
}

Runner add_sweep_compare(CLI::App& app) {
  auto a = std::make_shared<SweepCompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sweep-compare", "two sweeps compared per config and GEMM row, with a rank-test verdict");
  cmd->add_option("BASE", a->base, "baseline sweep directory")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("CAND", a->cand, "candidate sweep directory")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("-o,--out", a->out, "output directory (created)")
      ->check(output_directory())
      ->required();
  cmd->add_option("--base-layout", a->base_layout, "layout of BASE (default: --layout)");
  cmd->add_option("--cand-layout", a->cand_layout, "layout of CAND (default: --layout)");
  cmd->add_option("--xlsx", a->xlsx, "also write every table as a sheet of one workbook");
  cmd->add_option("--html", a->html, "side-by-side HTML page of the two sweeps");
  cmd->add_option("--labels", a->labels, "page labels A B (default: the directory names)")
      ->expected(2)
      ->needs(cmd->get_option("--html"));
  add_load_options(cmd, a->load);
  cmd->footer(
      "Writes OUT/compare_gpu_timeline.csv, compare_gemm_kernels.csv (change; verdict from a\n"
      "rank test across runs, 'cannot tell' with fewer than 4 runs a side; docs/sweeps.md).");
  return [a] { return run_sweep_compare(*a); };
}

Runner add_rocprof_config(CLI::App& app) {
  struct ConfigArgs {
    std::string csv, out;
  };
  auto a = std::make_shared<ConfigArgs>();
  CLI::App* cmd = app.add_subcommand("rocprof-config",
                                     "rocprofv3 input tracing exactly the kernels of a sweep CSV");
  cmd->add_option("CSV", a->csv,
                  "gemm_variance.csv or top5_gemm_kernels_time_variance.csv (kernel_name column)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--out", a->out, "FILE.yaml (also FILE.json, FILE_kernel_list.txt)")
      ->required();
  return [a] {
    auto kernels = engine::kernels_from_csv(a->csv);
    // rocprofv3's SQ_* counters exist on AMD GPUs only.
    if (std::string(engine::kernel_vendor(kernels)) == "nvidia")
      throw engine::SweepError(
          "these are NVIDIA kernels: rocprofv3 does not apply; profile them with Nsight "
          "Compute instead:\n" +
              engine::nsight_compute_command(kernels),
          ErrorKind::Unsupported);
    auto config = engine::rocprof_config(kernels);
    for (const auto& path : engine::write_rocprof_config(config, a->out)) fmt::print("{}\n", path);
    fmt::print("{}\n", count_text(config.kernels.size(), "kernel"));
    return 0;
  };
}

}  // namespace jarvis::cli
