// jarvis report TRACE --out DIR [--arch NAME|FILE] [options]
// jarvis report TRACE --html FILE [--svg-dir DIR] [options]
// jarvis report ROCPROF_RESULTS.json[.gz]|ROCPROF_CSV_DIR --out DIR [options]
//
// Writes the TraceLens-compatible CSV sheets to DIR/perf_report_csvs/. Every
// sheet is computed before anything is written; the sheets go to a temporary
// directory that replaces DIR/perf_report_csvs only once complete, so a
// failure never leaves a partial report behind.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "analysis/prepare.h"
#include "analysis/trace_store.h"
#include "charts/report_page.h"
#include "cli/commands.h"
#include "report/report.h"
#include "report/xlsx.h"
#include "rocprof/counters.h"
#include "rocprof/report.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

#if __has_include("perf/gpu_arch.h")
#include "perf/gpu_arch.h"
#define JARVIS_HAVE_GPU_ARCH 1
#endif

namespace jarvis::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: jarvis report TRACE (--out DIR | --html FILE) [options]\n"
    "writes DIR/perf_report_csvs/<sheet>.csv (TraceLens perf report sheets)\n"
    "and/or a self-contained HTML report with charts\n"
    "options:\n"
    "  --html FILE                      write the HTML report (arch detected when no --arch)\n"
    "  --svg-dir DIR                    also write each chart as DIR/<chart>.svg\n"
    "  --arch NAME|FILE                 GPU arch for roofline columns (e.g. MI300X, H100, or a "
    "JSON file)\n"
    "  --include-python-frames          put python frames into the call tree\n"
    "  --xlsx FILE                      also write all sheets to an Excel workbook\n"
    "  --no-kernel-summary              skip the kernel_summary sheet\n"
    "  --no-short-kernel-study          skip the short-kernel sheets\n"
    "  --no-coll-analysis               skip the coll_analysis sheet\n"
    "  --short-kernel-threshold-us X    short kernel threshold (default 10)\n"
    "  --short-kernel-bins N            histogram bins (default 100)\n"
    "rocprofv3 input (a *_results.json[.gz], a CSV set directory or one of its files;\n"
    "detected by content, TraceLens_generate_perf_report_rocprof's sheets):\n"
    "  --rocprof                        read TRACE as rocprofv3 output without detection\n"
    "  --kernel-details                 also write kernel_details (one row per dispatch)\n"
    "  --topk-kernels N                 kernel_details: only the N longest dispatches\n"
    "  --fix-rocprof-units              write times in the units the headers name (TraceLens\n"
    "                                   writes ns under us headers; see docs/deviations.md)\n";

const std::vector<std::string> kValueFlags = {"--out",
                                              "--arch",
                                              "--short-kernel-threshold-us",
                                              "--short-kernel-bins",
                                              "--xlsx",
                                              "--html",
                                              "--svg-dir",
                                              "--topk-kernels"};
const std::vector<std::string> kSwitches = {
    "--include-python-frames", "--no-kernel-summary", "--no-short-kernel-study",
    "--no-coll-analysis",      "--rocprof",           "--kernel-details",
    "--fix-rocprof-units"};
const std::vector<std::string> kRocprofOnly = {"--rocprof", "--kernel-details", "--topk-kernels",
                                               "--fix-rocprof-units"};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <typename T>
T parse_number(const std::string& text, const char* flag) {
  T v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size())
    throw UsageError(fmt::format("{} expects a number, got '{}'", flag, text));
  return v;
}

void check_flags(const Args& args) {
  for (size_t k = 0; k < args.size(); ++k) {
    const std::string& a = args[k];
    if (a.rfind("--", 0) != 0) continue;
    if (std::find(kValueFlags.begin(), kValueFlags.end(), a) != kValueFlags.end()) {
      if (k + 1 >= args.size()) throw UsageError(a + " needs a value");
      ++k;
      continue;
    }
    if (std::find(kSwitches.begin(), kSwitches.end(), a) == kSwitches.end())
      throw UsageError("unknown option " + a);
  }
}

// Writes the report into a fresh sibling directory, then swaps it in.
void write_report_dir(const Report& report, const fs::path& target) {
  fs::path parent = target.parent_path();
  auto dir_lock = lock_output_dir(target);
  fs::create_directories(parent);
  std::string suffix = std::to_string(::getpid());
  fs::path tmp = parent / (".perf_report_csvs.tmp." + suffix);
  fs::path old = parent / (".perf_report_csvs.old." + suffix);
  fs::remove_all(tmp);
  try {
    write_report_csvs(report, tmp.string());
    if (fs::exists(target)) fs::rename(target, old);
    fs::rename(tmp, target);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    if (!fs::exists(target, ec) && fs::exists(old, ec)) fs::rename(old, target, ec);
    throw;
  }
  std::error_code ec;
  fs::remove_all(old, ec);
}

void write_html_report(const Trace& trace, const Report& report, const std::string& trace_path,
                       const std::string& arch_name, const std::string& html_path,
                       const std::string& svg_dir) {
  charts::ReportPageOptions page;
  page.trace_path = trace_path;
  if (!arch_name.empty()) {
    page.arch_name = arch_name;
    page.arch = analysis::load_arch_json(arch_name);
    if (page.arch.contains("name") && page.arch["name"].is_string())
      page.arch_name = page.arch["name"].get<std::string>();
  }
  auto charts = charts::report_charts(trace, report, page);
  std::string html = charts::report_html(trace, report, charts, page);
  write_file_atomic(html_path, html);
  fmt::print("{}: HTML report, {} charts, {} bytes\n", html_path, charts.size(), html.size());
  if (!svg_dir.empty())
    for (const auto& path : charts::write_chart_svgs(charts, svg_dir)) fmt::print("{}\n", path);
}

// The rocprof report options from the shared ones and the rocprof flags.
rocprof::ReportOptions rocprof_options(const Args& args, const ReportOptions& shared) {
  if (has_flag(args, "--html")) throw UsageError("--html is not supported for rocprofv3 input");
  if (has_flag(args, "--arch") || has_flag(args, "--include-python-frames"))
    throw UsageError("--arch and --include-python-frames do not apply to rocprofv3 input");
  rocprof::ReportOptions o;
  o.kernel_summary = shared.kernel_summary;
  o.short_kernel_study = shared.short_kernel_study;
  o.short_kernel_threshold_us = shared.short_kernel_threshold_us;
  o.short_kernel_bins = shared.short_kernel_bins;
  o.kernel_details = has_flag(args, "--kernel-details");
  o.fix_units = has_flag(args, "--fix-rocprof-units");
  if (has_flag(args, "--topk-kernels")) {
    if (!o.kernel_details) throw UsageError("--topk-kernels needs --kernel-details");
    int topk = parse_number<int>(flag_value(args, "--topk-kernels"), "--topk-kernels");
    if (topk < 1) throw UsageError("--topk-kernels must be >= 1");
    o.topk_kernels = static_cast<size_t>(topk);
  }
  return o;
}

// TraceLens's rocprof sheets into DIR/perf_report_csvs; the counters, when
// the input has them, into DIR/rocprof_counters.
int write_rocprof_report(const std::string& path, const rocprof::ReportOptions& options,
                         const std::string& out, const std::string& xlsx) {
  rocprof::Profile profile = rocprof::load_profile(path);
  Report report;
  report.gpu_only = true;
  report.tables = rocprof::report_tables(profile, options);
  fs::path target = fs::path(out) / "perf_report_csvs";
  write_report_dir(report, target);
  for (const Table& t : report.tables)
    fmt::print("{}: {} rows\n", (target / (t.name + ".csv")).string(), t.rows.size());
  if (!profile.counters.empty()) {
    fs::path dir = fs::path(out) / "rocprof_counters";
    for (const Table& t : {rocprof::dispatch_counters_table(profile),
                           rocprof::kernel_counters_table(rocprof::kernel_counters(profile))}) {
      write_file_atomic((dir / (t.name + ".csv")).string(), t.to_csv());
      fmt::print("{}: {} rows\n", (dir / (t.name + ".csv")).string(), t.rows.size());
    }
  }
  if (!xlsx.empty()) write_xlsx(report.tables, xlsx);
  return 0;
}

}  // namespace

int cmd_report(const Args& args) {
  if (has_flag(args, "--help") || has_flag(args, "-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  ReportOptions options;
  rocprof::ReportOptions rocprof_report;
  bool rocprof_input = false;
  std::string out, trace_path;
#ifdef JARVIS_HAVE_GPU_ARCH
  GpuArch arch;
#endif
  try {
    check_flags(args);
    auto pos = positionals(args, kValueFlags);
    if (pos.size() != 1) throw UsageError("expected exactly one TRACE argument");
    trace_path = pos[0];
    out = flag_value(args, "--out");
    if (out.empty() && !has_flag(args, "--html"))
      throw UsageError("--out DIR or --html FILE is required");
    if (has_flag(args, "--svg-dir") && !has_flag(args, "--html"))
      throw UsageError("--svg-dir needs --html");
    options.include_python_frames = has_flag(args, "--include-python-frames");
    options.kernel_summary = !has_flag(args, "--no-kernel-summary");
    options.short_kernel_study = !has_flag(args, "--no-short-kernel-study");
    options.collective_analysis = !has_flag(args, "--no-coll-analysis");
    if (has_flag(args, "--short-kernel-threshold-us"))
      options.short_kernel_threshold_us = parse_number<double>(
          flag_value(args, "--short-kernel-threshold-us"), "--short-kernel-threshold-us");
    if (has_flag(args, "--short-kernel-bins")) {
      options.short_kernel_bins =
          parse_number<int>(flag_value(args, "--short-kernel-bins"), "--short-kernel-bins");
      if (options.short_kernel_bins < 1) throw UsageError("--short-kernel-bins must be >= 1");
    }
    if (has_flag(args, "--arch")) {
#ifdef JARVIS_HAVE_GPU_ARCH
      arch = perf::load_gpu_arch(flag_value(args, "--arch"));
      options.arch = &arch;
#else
      throw UsageError("--arch is not supported by this build (no GPU arch support)");
#endif
    }
    rocprof_input = has_flag(args, "--rocprof") || rocprof::is_rocprof_input(trace_path);
    if (rocprof_input) {
      if (out.empty()) throw UsageError("--out DIR is required for rocprofv3 input");
      rocprof_report = rocprof_options(args, options);
    } else {
      for (const auto& flag : kRocprofOnly)
        if (has_flag(args, flag)) throw UsageError(flag + " applies to rocprofv3 input only");
    }
  } catch (const UsageError& e) {
    std::fprintf(stderr, "jarvis report: %s\n%s", e.what(), kUsage);
    return 2;
  }
  if (rocprof_input)
    return write_rocprof_report(trace_path, rocprof_report, out, flag_value(args, "--xlsx"));

  Trace trace = load_trace(trace_path);
  CallTree tree(trace, TreeOptions{options.include_python_frames});
  std::string arch_name = has_flag(args, "--arch") ? flag_value(args, "--arch") : "";
#ifdef JARVIS_HAVE_GPU_ARCH
  // The HTML page draws rooflines, so it detects the arch like the MCP tools do.
  if (arch_name.empty() && has_flag(args, "--html")) {
    arch_name = detect_arch_name(trace);
    if (!arch_name.empty()) {
      arch = perf::load_gpu_arch(arch_name);
      options.arch = &arch;
    }
  }
#endif
  Report report = build_report(trace, tree, options);
  if (!out.empty()) {
    fs::path target = fs::path(out) / "perf_report_csvs";
    write_report_dir(report, target);
    for (const Table& t : report.tables)
      fmt::print("{}: {} rows\n", (target / (t.name + ".csv")).string(), t.rows.size());
  }
  if (has_flag(args, "--xlsx")) write_xlsx(report.tables, flag_value(args, "--xlsx"));
  if (has_flag(args, "--html"))
    write_html_report(trace, report, trace_path, arch_name, flag_value(args, "--html"),
                      flag_value(args, "--svg-dir"));
  return 0;
}

}  // namespace jarvis::cli
