// jarvis sweep DIR --out OUT [--layout P] [--top-k 5] [--jobs N] [--cache DIR|none] [--xlsx FILE]
// jarvis sweep-compare BASE CAND --out OUT [--layout P] [--base-layout P --cand-layout P] ...
// jarvis rocprof-config CSV --out FILE.yaml
//
// Sweep outputs are described in docs/sweeps.md. Progress (runs done / total,
// ETA) goes to stderr, results to stdout.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "cli/commands.h"
#include "report/xlsx.h"
#include "sweep/sweep.h"

namespace jarvis::cli {
namespace {

constexpr const char* kSweepUsage =
    "usage: jarvis sweep DIR --out OUT [options]\n"
    "analyses every run of a sweep (traces, TraceLens perf_report_csvs dirs or .xlsx) and\n"
    "writes OUT/gemm_variance.csv, gemm_variance_by_kernel.csv, gemm_variance_timestamps.csv,\n"
    "gemm_variance_coll_overlap.csv, gpu_timeline_*.csv, nccl_by_config.csv, failed_runs.csv\n"
    "options:\n"
    "  --layout P     run pattern with named fields, e.g.\n"
    "                 'runs/bs{batch}_ch{channels}/torch_profiler/rank{rank}/*.json.gz'\n"
    "                 (default: {threads}thread/nccl_{channel}channels/torch_profiler/"
    "rank{rank}/*.json*,\n"
    "                 then TraceLens report directories {threads}thread/"
    "perf_{channel}ch_rank{rank}_perf_report_csvs)\n"
    "  --top-k N      GEMM rows per run in gemm_variance (default 5)\n"
    "  --jobs N       runs analysed in parallel (default: cores)\n"
    "  --cache DIR    per-run cache directory (default DIR/.jarvis-sweep-cache; 'none': off)\n"
    "  --xlsx FILE    also write every table as a sheet of one workbook\n"
    "  --svg-dir DIR  also the variance plots (box / violin per field, interaction) as SVG\n"
    "  --html FILE    one self-contained HTML page: variance plots, timeline and NCCL by config,\n"
    "                 top-variance kernels\n"
    "  --quiet        no progress on stderr\n";

constexpr const char* kCompareUsage =
    "usage: jarvis sweep-compare BASE CAND --out OUT [options]\n"
    "compares two sweeps per config: OUT/compare_gpu_timeline.csv, compare_gemm_kernels.csv\n"
    "(change, and whether it lies inside run-to-run noise)\n"
    "options: --layout P (both), --base-layout P, --cand-layout P, --jobs N, --cache DIR|none,\n"
    "         --xlsx FILE, --html FILE [--labels A B] (side-by-side page; default labels: the\n"
    "         directory names), --quiet\n";

constexpr const char* kRocprofUsage =
    "usage: jarvis rocprof-config CSV --out FILE.yaml\n"
    "rocprofv3 input tracing exactly the kernels of CSV's kernel_name column (gemm_variance.csv\n"
    "or top5_gemm_kernels_time_variance.csv): FILE.yaml, FILE.json, FILE_kernel_list.txt\n";

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void check_flags(const Args& args, const std::vector<std::string>& values,
                 const std::vector<std::string>& switches) {
  for (size_t k = 0; k < args.size(); ++k) {
    const std::string& a = args[k];
    if (a.rfind("--", 0) != 0) continue;
    if (std::find(values.begin(), values.end(), a) != values.end()) {
      if (k + 1 >= args.size()) throw UsageError(a + " needs a value");
      ++k;
    } else if (std::find(switches.begin(), switches.end(), a) == switches.end()) {
      throw UsageError("unknown option " + a);
    }
  }
}

size_t parse_count(const Args& args, const std::string& flag, size_t fallback) {
  if (!has_flag(args, flag)) return fallback;
  std::string text = flag_value(args, flag);
  size_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v == 0)
    throw UsageError(fmt::format("{} expects a positive integer, got '{}'", flag, text));
  return v;
}

// Progress line on stderr: runs done / total and the remaining time at the
// rate so far.
sweep::LoadOptions load_options(const Args& args, const std::string& layout_flag) {
  sweep::LoadOptions o;
  o.pattern = flag_value(args, layout_flag);
  if (o.pattern.empty()) o.pattern = flag_value(args, "--layout");
  o.jobs = parse_count(args, "--jobs", 0);
  o.cache_dir = flag_value(args, "--cache");
  if (!has_flag(args, "--quiet")) {
    auto start = std::chrono::steady_clock::now();
    o.progress = [start](size_t done, size_t total, const std::string&) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      double eta = s / static_cast<double>(done) * static_cast<double>(total - done);
      std::fprintf(stderr, "\rsweep: %zu/%zu runs, %.1f s, ETA %.1f s   ", done, total, s, eta);
      if (done == total) std::fputc('\n', stderr);
      return true;
    };
  }
  return o;
}

// The summary line is progress-like (left out with --quiet); failures and
// warnings always go out.
void report_load(const sweep::Sweep& s, bool quiet) {
  if (!quiet)
    std::fprintf(stderr, "sweep %s: %zu runs (%zu from cache), layout %s\n", s.root.c_str(),
                 s.runs.size(), s.cache_hits, s.layout.pattern.c_str());
  if (!s.cache_warning.empty()) std::fprintf(stderr, "warning: %s\n", s.cache_warning.c_str());
  for (const auto& f : s.failures)
    std::fprintf(stderr, "failed run: %s: %s\n", f.path.c_str(), f.reason.c_str());
}

int usage_error(const char* cmd, const UsageError& e, const char* usage) {
  std::fprintf(stderr, "jarvis %s: %s\n%s", cmd, e.what(), usage);
  return 2;
}

const std::vector<std::string> kSweepValues = {"--out",   "--layout", "--top-k",   "--jobs",
                                               "--cache", "--xlsx",   "--svg-dir", "--html"};

// `--labels A B` takes two values: removed from the args (the generic flag
// parser takes one value per flag), returned as the pair.
std::pair<std::string, std::string> take_labels(Args& args) {
  for (size_t k = 0; k < args.size(); ++k) {
    if (args[k] != "--labels") continue;
    if (k + 2 >= args.size()) throw UsageError("--labels needs two values: --labels A B");
    std::pair<std::string, std::string> labels{args[k + 1], args[k + 2]};
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(k),
               args.begin() + static_cast<std::ptrdiff_t>(k + 3));
    return labels;
  }
  return {};
}

std::string dir_label(const std::string& dir) {
  std::filesystem::path p = std::filesystem::path(dir).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace

int cmd_sweep(const Args& args) {
  if (has_flag(args, "--help") || has_flag(args, "-h")) {
    std::fputs(kSweepUsage, stdout);
    return 0;
  }
  std::string dir, out;
  size_t top_k = 5;
  sweep::LoadOptions options;
  try {
    check_flags(args, kSweepValues, {"--quiet"});
    auto pos = positionals(args, kSweepValues);
    if (pos.size() != 1) throw UsageError("expected exactly one sweep DIR");
    dir = pos[0];
    out = flag_value(args, "--out");
    if (out.empty()) throw UsageError("--out OUT is required");
    top_k = parse_count(args, "--top-k", 5);
    options = load_options(args, "--layout");
  } catch (const UsageError& e) {
    return usage_error("sweep", e, kSweepUsage);
  }
  sweep::Sweep s = sweep::load_sweep(dir, options);
  report_load(s, has_flag(args, "--quiet"));
  auto tables = sweep::sweep_tables(s, top_k);
  for (const auto& path : sweep::write_sweep_outputs(tables, out, flag_value(args, "--xlsx")))
    fmt::print("{}\n", path);
  if (has_flag(args, "--svg-dir"))
    for (const auto& path :
         sweep::write_variance_svgs(s, tables.front(), flag_value(args, "--svg-dir")))
      fmt::print("{}\n", path);
  if (std::string html = flag_value(args, "--html"); !html.empty()) {
    write_file_atomic(html, sweep::sweep_html_page(s, tables));
    fmt::print("{}\n", html);
  }
  return 0;
}

int cmd_sweep_compare(const Args& given) {
  if (has_flag(given, "--help") || has_flag(given, "-h")) {
    std::fputs(kCompareUsage, stdout);
    return 0;
  }
  const std::vector<std::string> values = {"--out",  "--layout", "--base-layout", "--cand-layout",
                                           "--jobs", "--cache",  "--xlsx",        "--html"};
  Args args = given;
  std::vector<std::string> pos;
  std::pair<std::string, std::string> labels;
  try {
    labels = take_labels(args);
    check_flags(args, values, {"--quiet"});
    pos = positionals(args, values);
    if (pos.size() != 2) throw UsageError("expected BASE and CAND sweep directories");
    if (flag_value(args, "--out").empty()) throw UsageError("--out OUT is required");
    load_options(args, "--layout");  // validates --jobs
  } catch (const UsageError& e) {
    return usage_error("sweep-compare", e, kCompareUsage);
  }
  sweep::Sweep base = sweep::load_sweep(pos[0], load_options(args, "--base-layout"));
  report_load(base, has_flag(args, "--quiet"));
  sweep::Sweep cand = sweep::load_sweep(pos[1], load_options(args, "--cand-layout"));
  report_load(cand, has_flag(args, "--quiet"));
  auto comparison = sweep::compare_sweeps(base, cand);
  for (const auto& path : sweep::write_sweep_outputs(comparison, flag_value(args, "--out"),
                                                     flag_value(args, "--xlsx")))
    fmt::print("{}\n", path);
  if (std::string html = flag_value(args, "--html"); !html.empty()) {
    if (labels.first.empty()) labels = {dir_label(pos[0]), dir_label(pos[1])};
    write_file_atomic(
        html, sweep::sweep_compare_html_page(base, cand, comparison, labels.first, labels.second));
    fmt::print("{}\n", html);
  }
  return 0;
}

int cmd_rocprof_config(const Args& args) {
  if (has_flag(args, "--help") || has_flag(args, "-h")) {
    std::fputs(kRocprofUsage, stdout);
    return 0;
  }
  std::vector<std::string> pos;
  try {
    check_flags(args, {"--out"}, {});
    pos = positionals(args, {"--out"});
    if (pos.size() != 1) throw UsageError("expected exactly one CSV");
    if (flag_value(args, "--out").empty()) throw UsageError("--out FILE.yaml is required");
  } catch (const UsageError& e) {
    return usage_error("rocprof-config", e, kRocprofUsage);
  }
  auto config = sweep::rocprof_config(sweep::kernels_from_csv(pos[0]));
  for (const auto& path : sweep::write_rocprof_config(config, flag_value(args, "--out")))
    fmt::print("{}\n", path);
  fmt::print("{} kernels\n", config.kernels.size());
  return 0;
}

}  // namespace jarvis::cli
