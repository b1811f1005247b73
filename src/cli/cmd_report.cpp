// jarvis report TRACE --out DIR [options]      DIR/perf_report_csvs/*.csv + DIR/perf_report.xlsx
// jarvis report TRACE --html FILE [--svg-dir DIR]
// jarvis report ROCPROF_RESULTS.json[.gz]|ROCPROF_CSV_DIR --out DIR [options]
// jarvis report TRACE.xplane.pb --out DIR     TraceLens's JAX report sheets
//
// Every sheet is computed before anything is written; the sheets go to a
// temporary directory that replaces the CSV directory only once complete, so
// a failure never leaves a partial report behind. A CSV directory holding
// files jarvis did not write, or wrote and someone edited since, is refused
// unless --force: replacing it would delete them.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include <unistd.h>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/output_guard.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "engine/engine.h"

namespace jarvis::cli {
namespace {

namespace fs = std::filesystem;

struct ReportArgs {
  std::string trace, profile_json_path, out, csv_dir, xlsx, html, svg_dir, arch;
  bool no_xlsx = false, force = false, mkdirs = false;
  bool python_frames = false, no_kernel_summary = false, no_short_kernel_study = false;
  bool no_coll_analysis = false, tracelens_on_by_default = false;
  double short_kernel_threshold_us = 10;
  int short_kernel_bins = 100;
  bool rocprof = false, kernel_details = false, fix_rocprof_units = false;
  std::optional<size_t> topk_kernels;
  ProgressFlags progress;
};

// The CSV directory is replaced whole: one holding an input of this command
// or a trace is refused even with --force.
void refuse_inputs_in(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    if (is_input_file(entry.path()) || is_trace_file_name(entry.path()))
      usage_error(fmt::format(
          "{} holds {} ({}); the report replaces the whole directory: choose another --out",
          dir.string(), is_input_file(entry.path()) ? "an input of this command" : "a trace",
          entry.path().filename().string()));
  }
}

void refuse_foreign(const fs::path& target, bool force) {
  std::error_code ec;
  if (!fs::is_directory(target, ec)) return;
  refuse_inputs_in(target);
  if (force) return;
  auto foreign = engine::foreign_report_files(target.string());
  if (foreign.empty()) return;
  std::string shown;
  for (size_t k = 0; k < foreign.size() && k < 5; ++k) shown += (k ? ", " : "") + foreign[k];
  if (foreign.size() > 5) shown += fmt::format(" and {} more", foreign.size() - 5);
  usage_error(fmt::format(
      "{} holds files jarvis did not write or that were changed since it wrote them ({}); the "
      "report replaces the whole directory: "
      "choose another --out, or pass --force to replace it",
      target.string(), shown));
}

// Writes the report into a fresh sibling directory, then swaps it in.
void write_report_dir(const Report& report, const fs::path& target) {
  fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  auto dir_lock = lock_output_dir(target);
  fs::create_directories(parent);
  std::string suffix = std::to_string(::getpid());
  std::string stem = target.filename().string();
  fs::path tmp = parent / ("." + stem + ".tmp." + suffix);
  fs::path old = parent / ("." + stem + ".old." + suffix);
  fs::remove_all(tmp);
  try {
    engine::write_report_csvs(report, tmp.string());  // with its marker
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

// The annotated trace beside the HTML page (charts/annotated_trace.h).
std::string annotated_trace_path(const std::string& html) {
  return (fs::path(html).parent_path() / engine::annotated_trace_name(html)).string();
}

void write_html_report(const Trace& trace, const CallTree& report_tree, const Report& report,
                       const ReportArgs& a, const std::string& arch_name) {
  engine::ReportPageOptions page;
  page.trace_path = a.trace;
  if (!arch_name.empty()) {
    page.arch_name = arch_name;
    page.arch = engine::load_arch_json(arch_name);
    if (page.arch.contains("name") && page.arch["name"].is_string())
      page.arch_name = page.arch["name"].get<std::string>();
  }
  std::optional<GpuArch> gpu;
  if (!arch_name.empty() && arch_name != "none") gpu = engine::load_gpu_arch(arch_name);
  // The insights read a tree without Python frames: the report's, unless it
  // holds them (--include-python-frames).
  std::optional<CallTree> own_tree;
  if (a.python_frames) own_tree.emplace(trace);
  const engine::ReportVerdict verdict =
      engine::report_verdict(trace, own_tree ? *own_tree : report_tree, gpu ? &*gpu : nullptr);
  page.verdict = &verdict;
  page.annotated_trace = engine::annotated_trace_name(a.html);
  auto charts = engine::report_charts(trace, report, page);
  std::string html = engine::report_html(trace, report, charts, page);
  // The annotated trace first: the page links it.
  engine::AnnotatedTraceCounts counts;
  std::string annotated =
      engine::annotated_trace_gzip(trace, verdict, fs::path(a.trace).filename().string(), &counts);
  const std::string annotated_path = annotated_trace_path(a.html);
  write_file_atomic(annotated_path, annotated);
  write_file_atomic(a.html, html);
  fmt::print("{}: HTML report, {}, {} bytes\n", a.html, count_text(charts.size(), "chart"),
             html.size());
  fmt::print(
      "{}: annotated trace for Perfetto UI / chrome://tracing, {} events, critical path of {} "
      "iteration{} ({} slices), {} finding{}\n",
      annotated_path, counts.trace_events, counts.iterations, counts.iterations == 1 ? "" : "s",
      counts.path_slices, counts.finding_tracks, counts.finding_tracks == 1 ? "" : "s");
  if (!a.svg_dir.empty())
    for (const auto& path : engine::write_chart_svgs(charts, a.svg_dir)) fmt::print("{}\n", path);
}

ReportOptions report_options(const ReportArgs& a) {
  ReportOptions o;
  o.include_python_frames = a.python_frames;
  o.kernel_summary = !a.no_kernel_summary;
  o.short_kernel_study = !a.no_short_kernel_study;
  o.collective_analysis = !a.no_coll_analysis;
  o.short_kernel_threshold_us = a.short_kernel_threshold_us;
  o.short_kernel_bins = a.short_kernel_bins;
  return o;
}

engine::RocprofReportOptions rocprof_options(const ReportArgs& a) {
  if (!a.html.empty()) usage_error("--html is not supported for rocprofv3 input");
  if (!a.arch.empty() || a.python_frames)
    usage_error("--arch and --include-python-frames do not apply to rocprofv3 input");
  if (a.topk_kernels && !a.kernel_details) usage_error("--topk-kernels needs --kernel-details");
  return engine::RocprofReportOptions::from_shared(report_options(a), a.kernel_details,
                                                   a.topk_kernels, a.fix_rocprof_units);
}

// Where the CSVs and the workbook go: --csv-dir (TraceLens's output_csvs_dir)
// holds the sheets itself; --out DIR holds perf_report_csvs/ and, unless
// --no-xlsx, perf_report.xlsx.
struct Targets {
  std::optional<fs::path> csv_dir;
  std::string xlsx;
};

Targets targets(const ReportArgs& a) {
  Targets t;
  if (!a.csv_dir.empty()) t.csv_dir = fs::path(a.csv_dir);
  if (!a.out.empty()) t.csv_dir = fs::path(a.out) / "perf_report_csvs";
  t.xlsx = a.xlsx;
  if (t.xlsx.empty() && !a.out.empty() && !a.no_xlsx)
    t.xlsx = (fs::path(a.out) / "perf_report.xlsx").string();
  return t;
}

// "1 row", "2 rows".
std::string row_count_text(size_t rows) {
  return fmt::format("{} row{}", rows, rows == 1 ? "" : "s");
}

// Returns the lines to print once progress is done (stdout stays clean of
// the progress line).
std::vector<std::string> write_tables(const Report& report, const Targets& t) {
  std::vector<std::string> lines;
  // The workbook (deflated sheets, the larger job) is written on a second
  // thread while this one writes the CSVs; both only read the tables.
  std::future<void> workbook;
  if (!t.xlsx.empty() && t.csv_dir && std::thread::hardware_concurrency() > 1)
    workbook = std::async(std::launch::async, [&] { engine::write_xlsx(report.tables, t.xlsx); });
  try {
    if (t.csv_dir) {
      write_report_dir(report, *t.csv_dir);
      for (const Table& table : report.tables)
        lines.push_back(fmt::format("{}: {}", (*t.csv_dir / (table.name + ".csv")).string(),
                                    row_count_text(table.rows.size())));
    }
  } catch (...) {
    if (workbook.valid()) workbook.wait();  // it reads the tables: finish before they go
    throw;
  }
  if (!t.xlsx.empty()) {
    if (workbook.valid())
      workbook.get();  // rethrows its error
    else
      engine::write_xlsx(report.tables, t.xlsx);
    lines.push_back(fmt::format("{}: {} sheets", t.xlsx, report.tables.size()));
  }
  return lines;
}

// Ops left out of the perf sheets because their model failed (TraceLens
// prints the same warning per op); one line per op name and reason.
void print_model_failures(const Report& report) {
  constexpr size_t kShown = 10;
  for (size_t k = 0; k < report.model_failures.size() && k < kShown; ++k) {
    const ModelFailure& f = report.model_failures[k];
    std::fprintf(stderr,
                 "warning: perf model failed for %zu op(s) of %s (left out of its sheet): %s\n",
                 f.count, f.op.c_str(), f.reason.c_str());
  }
  if (report.model_failures.size() > kShown)
    std::fprintf(stderr, "warning: ... and %zu more op names with perf-model failures\n",
                 report.model_failures.size() - kShown);
}

void print_lines(const std::vector<std::string>& lines) {
  for (const auto& line : lines) fmt::print("{}\n", line);
}

// TraceLens's rocprof sheets, and the counters (when the input has them) in
// OUT/rocprof_counters.
int run_rocprof(const ReportArgs& a, const Targets& t, Progress& progress) {
  engine::RocprofReportOptions options = rocprof_options(a);
  progress.phase("load");
  engine::RocprofProfile profile = engine::load_profile(a.trace);
  progress.phase("report");
  Report report;
  report.gpu_only = true;
  report.tables = engine::rocprof_report_tables(profile, options);
  std::vector<Table> counters;
  if (!profile.counters.empty())
    counters = {engine::dispatch_counters_table(profile),
                engine::kernel_counters_table(engine::kernel_counters(profile))};
  progress.phase("write");
  auto lines = write_tables(report, t);
  progress.finish();
  print_lines(lines);
  if (!counters.empty() && !a.out.empty()) {
    fs::path dir = fs::path(a.out) / "rocprof_counters";
    for (const Table& table : counters) {
      write_file_atomic((dir / (table.name + ".csv")).string(), table.to_csv());
      fmt::print("{}: {}\n", (dir / (table.name + ".csv")).string(),
                 row_count_text(table.rows.size()));
    }
  }
  return 0;
}

// TraceLens's JAX report sheets that jarvis computes for an XPlane trace
// (docs/jax.md lists the ones it does not).
int run_xplane(const ReportArgs& a, const Targets& t, Progress& progress) {
  if (!a.html.empty()) usage_error("--html is not supported for XPlane input");
  if (a.python_frames) usage_error("--include-python-frames does not apply to XPlane input");
  // TraceLens's JAX sheets carry no rooflines: say so rather than ignore it.
  if (!a.arch.empty())
    fmt::print(stderr,
               "note: --arch {} is not used for XPlane input (TraceLens's JAX sheets have no "
               "rooflines); `jarvis insights --arch` uses it\n",
               a.arch);
  progress.phase("load");
  Trace trace = engine::load_non_kineto_input(a.trace, InputFormat::Xplane).trace;
  progress.phase("report");
  Report report;
  report.gpu_only = true;
  report.tables = engine::xplane_report_tables(trace);
  progress.phase("write");
  auto lines = write_tables(report, t);
  progress.finish();
  print_lines(lines);
  return 0;
}

// A directory that is no rocprofv3 CSV set is most often the ranks of one
// run: say which commands take it instead of failing to parse it.
void refuse_trace_directory(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return;
  std::vector<std::string> traces = expand_rank_traces({path});
  throw Error(ErrorKind::InvalidInput,
              fmt::format("{} is a directory of {} trace(s): report reads one trace (e.g. {}); "
                          "`jarvis collectives`, `critical-path` and `what-if` take the "
                          "directory of rank traces, `jarvis sweep` a sweep of runs",
                          path, traces.size(), traces.front()));
}

// Before any work: no output is the input (by inode) or a trace, no two
// outputs are one file, and existing files follow the overwrite rule
// (base/output_guard.h; --force).
void check_report_targets(const ReportArgs& a, const Targets& t) {
  note_input_file(a.trace);
  // The workbook --out writes by default is named as --out's, not as an --xlsx the user gave.
  std::vector<std::pair<std::string, std::string>> files = {
      {t.xlsx, a.xlsx.empty() ? "--out's workbook" : "--xlsx"}, {a.html, "--html"}};
  if (!a.xlsx.empty() && !a.html.empty() &&
      fs::absolute(a.xlsx).lexically_normal() == fs::absolute(a.html).lexically_normal())
    usage_error("--xlsx and --html name the same file");
  if (!a.html.empty()) files.emplace_back(annotated_trace_path(a.html), "--html's annotated trace");
  for (const auto& [file, flag] : files)
    if (!file.empty()) check_output_target(file, flag);
  if (t.csv_dir) refuse_foreign(*t.csv_dir, a.force);
}

int run_report(ReportArgs& a) {
  if (!a.profile_json_path.empty()) {
    if (!a.trace.empty()) usage_error("give the trace once: TRACE or --profile_json_path");
    a.trace = a.profile_json_path;
  }
  if (a.trace.empty()) usage_error("TRACE is required");
  if (a.out.empty() && a.csv_dir.empty() && a.xlsx.empty() && a.html.empty())
    usage_error("nothing to write: give --out DIR (or --csv-dir DIR, --xlsx FILE, --html FILE)");
  if (!a.xlsx.empty() && a.no_xlsx)
    usage_error("--xlsx FILE and --no-xlsx contradict each other: give one of them");
  // --out DIR is made by the report itself: a page or workbook inside it
  // needs no --mkdirs (issue 64 point 7).
  auto inside_out = [&](const std::string& file) {
    if (a.out.empty() || file.empty()) return false;
    namespace fs = std::filesystem;
    // The file's own absolute path first: a bare name's parent is "", which
    // fs::absolute refuses ("cannot make absolute path": `report T --out DIR
    // --xlsx t.xlsx` failed with it).
    const fs::path rel = fs::absolute(fs::path(file))
                             .parent_path()
                             .lexically_normal()
                             .lexically_relative(fs::absolute(a.out).lexically_normal());
    return !rel.empty() && *rel.begin() != "..";
  };
  check_output_parent(a.xlsx, a.mkdirs || inside_out(a.xlsx), "--xlsx");
  check_output_parent(a.html, a.mkdirs || inside_out(a.html), "--html");
  Targets t = targets(a);
  check_report_targets(a, t);
  if (!t.xlsx.empty()) engine::load_xlsx_writer();  // a missing module fails before the work
  Progress progress(a.progress.resolve(), "report");
  const InputFormat format = engine::detect_input_format(a.trace);
  bool rocprof_input =
      a.rocprof || format == InputFormat::RocprofJson || format == InputFormat::RocprofCsv;
  if (rocprof_input) return run_rocprof(a, t, progress);
  if (format == InputFormat::Xplane) return run_xplane(a, t, progress);
  refuse_trace_directory(a.trace);
  if (a.kernel_details || a.topk_kernels || a.fix_rocprof_units)
    usage_error(
        "--kernel-details, --topk-kernels and --fix-rocprof-units apply to rocprofv3 "
        "input only");

  ReportOptions options = report_options(a);
  std::optional<GpuArch> arch;
  if (!a.arch.empty() && a.arch != "none") arch = engine::load_gpu_arch(a.arch);
  progress.phase("load");
  // A first load's snapshot is written beside the files, where the
  // workbook's tail leaves a core idle (the tree and the sheets keep both
  // busy); the writer joins on return.
  engine::SnapshotWriteBehind snapshot_writer(engine::SnapshotWriteBehind::Start::OnRequest);
  // Kineto through its loader (snapshot cache); the other formats through
  // their readers into the same event model, then the same report.
  std::shared_ptr<const Trace> loaded =
      format == InputFormat::KinetoJson
          ? engine::load_trace_write_behind(a.trace, snapshot_writer)
          : std::make_shared<const Trace>(engine::load_non_kineto_input(a.trace, format).trace);
  const Trace& trace = *loaded;
  progress.phase("call tree");
  CallTree tree(trace, TreeOptions{options.include_python_frames});
  // No --arch: the bundled arch of the GPU the trace ran on, so the roofline
  // columns appear without a flag (--arch none leaves them out, as TraceLens
  // does without --gpu_arch_json_path).
  std::string arch_name = a.arch;
  if (arch_name.empty()) {
    arch_name = engine::detect_arch_name(trace);
    if (!arch_name.empty()) arch = engine::load_gpu_arch(arch_name);
  }
  if (arch_name == "none") arch_name.clear();
  if (arch) options.arch = &*arch;
  progress.phase("report");
  Report report = engine::build_report(trace, tree, options);
  progress.phase("write");
  snapshot_writer.start();
  auto lines = write_tables(report, t);
  progress.finish();
  print_model_failures(report);
  fmt::print("arch: {}\n", arch ? arch->name + (a.arch.empty() ? " (detected from the trace)" : "")
                                : std::string("none (no roofline columns)"));
  print_lines(lines);
  if (!a.html.empty()) write_html_report(trace, tree, report, a, arch_name);
  return 0;
}

void add_pytorch_options(CLI::App* cmd, ReportArgs& a) {
  cmd->add_option("--arch,--gpu_arch_json_path", a.arch,
                  "GPU arch for the roofline columns: bundled name (MI300X, H100, ...), arch "
                  "JSON file, or none (default: the bundled arch of the trace's GPU)");
  cmd->add_flag("--include-python-frames", a.python_frames, "put python frames into the tree");
  cmd->add_flag("--no-kernel-summary", a.no_kernel_summary, "skip the kernel_summary sheet");
  cmd->add_flag("--no-short-kernel-study", a.no_short_kernel_study, "skip the short-kernel sheets");
  cmd->add_flag("--no-coll-analysis,--disable_coll_analysis", a.no_coll_analysis,
                "skip the coll_analysis sheet");
  cmd->add_flag("--enable_kernel_summary,--short_kernel_study", a.tracelens_on_by_default,
                "TraceLens spellings of sheets jarvis writes by default (accepted, no effect)");
  cmd->add_option("--short-kernel-threshold-us,--short_kernel_threshold_us",
                  a.short_kernel_threshold_us, "short kernel threshold in us")
      ->check(CLI::PositiveNumber)
      ->default_str("10");
  cmd->add_option("--short-kernel-bins,--short_kernel_histogram_bins", a.short_kernel_bins,
                  "short-kernel histogram bins")
      ->check(CLI::Range(1, 100000))
      ->default_str("100");
}

void add_rocprof_options(CLI::App* cmd, ReportArgs& a) {
  auto* group = cmd->add_option_group("rocprofv3 input",
                                      "a *_results.json[.gz], a CSV set directory or one of its "
                                      "files; detected by content (TraceLens's rocprof sheets)");
  group->add_flag("--rocprof", a.rocprof, "read TRACE as rocprofv3 output without detection");
  group->add_flag("--kernel-details", a.kernel_details,
                  "also write kernel_details (one row per dispatch)");
  group->add_option("--topk-kernels", a.topk_kernels, "kernel_details: the N longest dispatches")
      ->check(CLI::Range(size_t{1}, size_t{1} << 40));
  group->add_flag("--fix-rocprof-units", a.fix_rocprof_units,
                  "write times in the units the headers name (see docs/deviations.md)");
}

}  // namespace

Runner add_report(CLI::App& app) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "TraceLens perf report: CSV sheets, Excel workbook, HTML report with charts");
  cmd->add_option("TRACE", a->trace,
                  "Kineto trace (.json/.json.gz), rocprofv3 output or XPlane (.xplane.pb)");
  cmd->add_option("--profile_json_path", a->profile_json_path, "TraceLens spelling of TRACE");
  auto* out = cmd->add_option("-o,--out", a->out,
                              "output directory: DIR/perf_report_csvs/<sheet>.csv and "
                              "DIR/perf_report.xlsx (created)")
                  ->check(output_directory());
  cmd->add_option("--csv-dir,--output_csvs_dir", a->csv_dir,
                  "write the sheets straight into this directory (TraceLens's layout)")
      ->check(output_directory())
      ->excludes(out);
  cmd->add_option("--xlsx,--output_xlsx_path", a->xlsx,
                  "Excel workbook path (default with --out: DIR/perf_report.xlsx)");
  cmd->add_flag("--no-xlsx", a->no_xlsx, "no workbook beside the CSVs");
  cmd->add_option("--html", a->html, "self-contained HTML report with charts");
  cmd->add_option("--svg-dir", a->svg_dir, "also each chart as DIR/<chart>.svg")
      ->check(output_directory())
      ->needs(cmd->get_option("--html"));
  cmd->add_flag("--force", a->force,
                "replace files jarvis did not write (the CSV directory, the workbook, the HTML "
                "page); never an input or a trace");
  cmd->add_flag("--mkdirs", a->mkdirs, "create missing parent directories of --xlsx/--html");
  add_pytorch_options(cmd, *a);
  add_rocprof_options(cmd, *a);
  add_progress_flags(cmd, a->progress);
  cmd->footer("TraceLens flag spellings are accepted where they map to jarvis's (docs/cli.md).");
  return [a] { return run_report(*a); };
}

}  // namespace jarvis::cli
