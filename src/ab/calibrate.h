// `jarvis calibrate`: fits the profiler-cost model of the un-profiled
// estimate (critical_path/calibration.h) to this host (docs/ab.md). A
// workload (the built-in CPU one with many small ops, or the user's command)
// runs through the shim clean, then once under each profiler setting
// (plain, record_shapes, +with_stack, +profile_memory), each in its own
// process; each setting's excess over the clean step, divided by the events
// it recorded per step and the trace's op gap, gives that setting's cost in
// op gaps.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ab/host_step.h"
#include "ab/shim_run.h"
#include "critical_path/calibration.h"

namespace jarvis::ab {

// One profiler setting's run and what was fitted on it.
struct SettingFit {
  std::string name;                   // plain / shapes / shapes_stack / shapes_memory
  std::vector<std::string> profiler;  // the torch.profiler flags
  std::string trace;
  StepEvents events;
  // recorded step - clean step: the clean process run beside this one when
  // paired (clean_beside_us), else the clean runs' step.
  double excess_us = 0;
  double clean_beside_us = 0;  // paired: the clean process run beside it
  // The un-profiled estimate of this trace with the fitted and the
  // built-in model (host_only_step), for the report.
  double estimated_fitted_us = 0, estimated_builtin_us = 0;
  std::string note;
};

struct Calibration {
  critical_path::HostKey host;
  std::string device, date;
  double clean_step_us = 0;
  std::vector<double> clean_runs_us;
  std::vector<SettingFit> settings;
  critical_path::ProfilerCostModel model;
  std::vector<std::string> notes;  // costs kept built in, and why
};

// The four settings, in the order they are fitted.
std::vector<SettingFit> calibration_settings();

// Fits the model from the clean step and each setting's step events
// (settings[k].events and excess_us set); keeps a built-in cost where the
// traces cannot show it (no runtime calls on a CPU, no Python frames from a
// profiler without Kineto), saying so in notes.
void fit_model(Calibration& c);

struct CalibrateOptions {
  std::string command;   // "" for the built-in workload
  std::string python;    // the interpreter of the built-in workload
  std::string work_dir;  // where runs, logs and traces go
  int runs = 2;          // clean processes
  ShimSettings shim;
  // Each profiled process runs beside a clean one, started together (the
  // shim's barrier), and its excess is over that one: on a loaded host the
  // speed moves by 2x between processes run at different times, which no
  // per-event cost can be fitted through. Off for a command that needs a
  // device to itself (--cmd on a GPU): set by the CLI.
  bool paired = true;
};

// Runs the workload and fits; the traces stay in work_dir.
Calibration run_calibration(const CalibrateOptions& o,
                            const std::function<void(const std::string&)>& progress);

// The stored form (read back by critical_path::read_calibration).
nlohmann::json calibration_json(const Calibration& c);
// calibration_dir()/<hostname>-<hash of cpu model and torch>.json
std::string default_calibration_path(const critical_path::HostKey& host);

}  // namespace jarvis::ab
