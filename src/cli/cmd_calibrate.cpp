// jarvis calibrate [--cmd CMD] [--out FILE] [--python PY] [--work-dir DIR]
//
// Fits the profiler-cost model of the un-profiled estimate to this host and
// stores it per host (docs/ab.md, docs/critical-path.md).
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "engine/engine.h"

namespace jarvis::cli {
namespace {

struct CalibrateArgs {
  engine::CalibrateOptions options;
  std::string out;
  bool quiet = false, paired = false, sequential = false;
};

// The first interpreter that imports torch.
std::string python_with_torch(const std::string& chosen) {
  std::vector<std::string> candidates;
  if (!chosen.empty())
    candidates = {chosen};
  else
    candidates = {"python3", "/usr/bin/python3"};
  for (const auto& python : candidates) {
    const std::string probe = fmt::format("'{}' -c 'import torch' >/dev/null 2>&1", python);
    if (std::system(probe.c_str()) == 0) return python;
  }
  throw UsageError(
      fmt::format("no Python that imports torch ({}): install PyTorch (Debian: apt-get install "
                  "python3-torch) or name the interpreter with --python",
                  chosen.empty() ? "tried python3, /usr/bin/python3" : "tried " + chosen));
}

int run_calibrate(CalibrateArgs& a) {
  auto& o = a.options;
  if (o.command.empty()) o.python = python_with_torch(o.python);
  // Paired by default for the built-in CPU workload; --cmd (maybe a GPU job,
  // which a second process would share the device with) runs alone unless
  // --paired.
  o.paired = a.sequential ? false : (a.paired || o.command.empty());
  if (o.work_dir.empty())
    o.work_dir = (std::filesystem::temp_directory_path() /
                  fmt::format("jarvis-calibrate-{}", static_cast<long>(::getpid())))
                     .string();
  auto c = engine::run_calibration(o, [&](const std::string& what) {
    if (!a.quiet) std::fprintf(stderr, "jarvis calibrate: %s\n", what.c_str());
  });
  const std::string out = a.out.empty() ? engine::default_calibration_path(c.host) : a.out;
  std::filesystem::create_directories(std::filesystem::path(out).parent_path().empty()
                                          ? std::filesystem::path(".")
                                          : std::filesystem::path(out).parent_path());
  write_file_atomic(out, engine::calibration_json(c).dump(1) + "\n");
  fmt::print("host: {} ({}), torch {}, {}\n", c.host.hostname, c.host.cpu_model, c.host.torch,
             c.device);
  fmt::print("clean step: {:.3f} ms ({} processes)\n", c.clean_step_us / 1e3,
             c.clean_runs_us.size());
  fmt::print(
      "| setting | recorded ms | clean beside ms | ops/step | inputs/step | frames/step | "
      "memory/step | op gap us | est. ms (fitted) | est. ms (built-in) |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& s : c.settings)
    fmt::print(
        "| {} | {:.3f} | {} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.2f} | {:.3f} | {:.3f} |\n",
        s.name, s.events.recorded_step_us / 1e3,
        o.paired ? fmt::format("{:.3f}", s.clean_beside_us / 1e3) : "-", s.events.ops,
        s.events.inputs, s.events.python_frames, s.events.memory_events, s.events.op_gap_us,
        s.estimated_fitted_us / 1e3, s.estimated_builtin_us / 1e3);
  const auto& m = c.model;
  fmt::print(
      "costs in op gaps: op {:.2f}, with shapes {:.2f} + {:.2f} per input, runtime call {:.2f}, "
      "python frame {:.2f}, memory event {:.2f}\n",
      m.op_gaps, m.shapes_op_gaps, m.shapes_input_gaps, m.runtime_call_gaps, m.python_frame_gaps,
      m.memory_event_gaps);
  for (const auto& n : c.notes) fmt::print("note: {}\n", n);
  fmt::print("wrote {} (traces and logs in {})\n", out, o.work_dir);
  return 0;
}

}  // namespace

Runner add_calibrate(CLI::App& app) {
  auto a = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "fit the profiler-overhead model of the un-profiled estimate to this host");
  auto& o = a->options;
  o.shim.window = 50;
  o.shim.windows = 5;
  o.shim.profile_steps = 5;
  cmd->add_option("--cmd", o.command,
                  "your own command instead of the built-in CPU workload (run through the same "
                  "step timer)");
  cmd->add_option("--python", o.python,
                  "the interpreter of the built-in workload (default: python3, else "
                  "/usr/bin/python3, the first that imports torch)");
  cmd->add_option("--out", a->out,
                  "calibration FILE (default: <config dir>/calibration/<host>-<hash>.json, "
                  "which the un-profiled estimate finds by the trace's host)");
  cmd->add_option("--work-dir", o.work_dir,
                  "where the runs' traces and logs go (default: a temp folder)");
  cmd->add_option("--runs", o.runs, "clean processes")->default_str("2");
  cmd->add_option("--warmup", o.shim.warmup, "steps before timing or profiling")->default_str("3");
  cmd->add_option("--window", o.shim.window, "steps per timed window")->default_str("50");
  cmd->add_option("--windows", o.shim.windows, "timed windows per clean process")->default_str("5");
  cmd->add_option("--profile-steps", o.shim.profile_steps, "profiled steps")->default_str("5");
  cmd->add_option("--step-fn", o.shim.step_fn, "module:function that is one step (with --cmd)");
  cmd->add_option("--timeout", o.shim.timeout_s, "seconds one process may run")
      ->default_str("1800");
  cmd->add_flag("--paired", a->paired,
                "with --cmd: run each profiled process beside a clean one (the built-in "
                "workload always does)");
  cmd->add_flag("--sequential", a->sequential,
                "run each profiled process alone, its excess over the clean runs (default for "
                "--cmd)");
  cmd->add_flag("-q,--quiet", a->quiet, "no progress on stderr");
  cmd->footer(
      "Runs the workload clean, then under plain / record_shapes / +with_stack / +profile_memory,\n"
      "each in a fresh process, and fits each recorded event's cost in op gaps. The config dir:\n"
      "$JARVIS_CONFIG_DIR, else $XDG_CONFIG_HOME/jarvis, else ~/.config/jarvis. Traces recorded "
      "by\n"
      "jarvis ab or calibrate name their host; any other trace takes a calibration by\n"
      "JARVIS_CALIBRATION=FILE. docs/ab.md.");
  return [a] { return run_calibrate(*a); };
}

}  // namespace jarvis::cli
