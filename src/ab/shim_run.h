// One process of the user's command under the shim (shim.h): clean (timed
// windows of steps) or profiled (one trace), and what the shim wrote back.
#pragma once

#include <string>
#include <vector>

#include "ab/process.h"
#include "base/error.h"
#include "critical_path/calibration.h"

namespace jarvis::ab {

// A command that failed, timed out or ended before the measurement was
// complete; the message names the command, the log and its tail.
class AbError : public ErrorOf<ErrorKind::InvalidInput> {
 public:
  using ErrorOf::ErrorOf;
};

struct ShimSettings {
  int warmup = 3;         // steps before timing or profiling
  int window = 10;        // steps per timed window
  int windows = 3;        // timed windows per clean process
  int profile_steps = 3;  // profiled steps (after one profiler warm-up step)
  std::string step_fn;    // "module:function": the step instead of optimizer.step
  // torch.profiler settings of the profiled run: record_shapes, with_stack,
  // profile_memory (none: plain).
  std::vector<std::string> profiler = {"record_shapes"};
  double timeout_s = 1800;
  bool keep_running = false;  // let the program run on after the measurement
};

inline constexpr const char* kModeClean = "clean";
inline constexpr const char* kModeProfile = "profile";

struct ShimResult {
  std::string step_source;             // optimizer / profiler / function
  std::vector<double> window_step_ms;  // clean: each window's mean step
  // clean: each timed step's host wall time (no device sync: on a GPU, the
  // host's view only; on a CPU, the step)
  std::vector<double> host_step_ms;
  double step_ms = 0;                    // clean: the median window
  std::vector<double> profiled_step_ms;  // profile: host wall time of each profiled step
  double shim_us_per_step = 0;           // the hook's own measured cost
  bool user_profiler = false;            // the script ran torch.profiler itself
  std::string trace;                     // profile: the trace written
  critical_path::HostKey host;
  std::string device;
  double wall_s = 0;
};

// Runs `command` once under the shim in `mode`, the shim's files in
// shim_dir, its result in result_path, stdout/stderr in log_path; throws
// AbError when the process fails or the measurement is incomplete.
ShimResult run_under_shim(const std::string& command, const EnvList& env,
                          const std::string& shim_dir, const std::string& mode,
                          const ShimSettings& settings, const std::string& result_path,
                          const std::string& trace_path, const std::string& log_path);

}  // namespace jarvis::ab
