// jarvis memory TRACE [--reference TRACE] [--device D] [--out DIR] [--html FILE]:
// device memory of a trace recorded with profile_memory=True.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>

#include "base/atomic_file.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "engine/engine.h"

namespace jarvis::cli {
namespace {

struct MemoryArgs {
  std::string trace, reference, device, out, html;
  size_t timeline_points = 2000;
  bool mkdirs = false;
  ProgressFlags progress;
};

// The page draws at most 1000 points per device (a chart is 700 px wide);
// fewer when --timeline-points asks for fewer.
std::string write_memory_page(const engine::MemoryAnalysis& analysis, const MemoryArgs& a) {
  engine::MemoryPageOptions page;
  page.trace_path = a.trace;
  page.timeline_points = std::min(a.timeline_points, engine::kMemoryChartPoints);
  std::string html = engine::memory_html(analysis, page);
  write_file_atomic(a.html, html);
  return fmt::format("{}: memory page, {} device{}, {} bytes", a.html, analysis.devices.size(),
                     analysis.devices.size() == 1 ? "" : "s", html.size());
}

int run_memory(const MemoryArgs& a) {
  check_output_parent(a.html, a.mkdirs, "--html");
  Progress progress(a.progress.resolve(), "memory");
  progress.phase("load");
  Trace trace = engine::load_any_trace(a.trace);
  progress.phase("analyse");
  engine::MemoryAnalysis analysis = engine::analyse_memory(trace);
  std::string text = engine::memory_summary_text(analysis, a.device);  // checks --device
  std::string diff_text;
  if (!a.reference.empty()) {
    progress.phase("reference");
    Trace reference = engine::load_any_trace(a.reference);
    diff_text =
        engine::memory_diff_text(engine::diff_memory(engine::analyse_memory(reference), analysis));
  }
  std::vector<std::string> files;
  if (!a.out.empty()) {
    progress.phase("write");
    files = engine::write_memory_files(analysis, a.out, a.timeline_points);
  }
  if (!a.html.empty()) {
    progress.phase("html");
    files.push_back(write_memory_page(analysis, a));
  }
  progress.finish();
  fmt::print("{}", text);
  if (!diff_text.empty()) fmt::print("against {}:\n{}\n", a.reference, diff_text);
  for (const std::string& f : files) fmt::print("{}\n", f);
  return 0;
}

}  // namespace

Runner add_memory(CLI::App& app) {
  auto a = std::make_shared<MemoryArgs>();
  CLI::App* cmd = app.add_subcommand(
      "memory",
      "device memory (profile_memory=True traces): peak, what holds it, leaks, growth per step");
  cmd->add_option("TRACE", a->trace, "Kineto trace (.json/.json.gz)")->required();
  cmd->add_option("--reference", a->reference,
                  "a reference run's trace: print how the peak and its holders changed");
  cmd->add_option("--device", a->device,
                  "device printed (cuda:0, hip:0, cpu; default: largest GPU peak)");
  cmd->add_option("-o,--out", a->out, "write the CSV and JSON files into DIR (created)")
      ->check(output_directory());
  cmd->add_option("--html", a->html,
                  "write a self-contained HTML page: per device the memory timeline chart "
                  "(allocated, reserved, peak, steps), the holders of the peak, leaks, findings");
  cmd->add_flag("--mkdirs", a->mkdirs, "create a missing parent directory of --html");
  cmd->add_option("--timeline-points", a->timeline_points,
                  "points per device in memory_timeline.csv and (at most 1000) in the --html "
                  "chart (the peak is always kept)")
      ->default_str("2000")
      ->check(CLI::Range(size_t{3}, size_t{10000000}));
  add_progress_flags(cmd, a->progress);
  cmd->footer(
      "Writes DIR/memory_timeline.csv (allocated and reserved bytes over time, downsampled),\n"
      "DIR/memory_at_peak.csv (every allocation live at the peak, with its op, module path and\n"
      "step), DIR/memory_by_op.csv (per op and module: bytes at the peak, never freed,\n"
      "allocated) and DIR/memory_summary.json. --html FILE writes one page that opens\n"
      "offline (inline SVG, no network). A trace recorded without profile_memory=True\n"
      "fails with exit code 1.");
  return [a] { return run_memory(*a); };
}

}  // namespace jarvis::cli
