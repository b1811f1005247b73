// The profiler-cost model of the un-profiled estimate (docs/critical-path.md,
// "Profiler overhead"), built in or fitted to one host by `jarvis calibrate`
// (docs/ab.md): each recorded event's cost as a multiple of the trace's own
// op gap (ProfilerCost::op_gap_us).
//
// A calibration is stored per host under the user's config directory
// ($JARVIS_CONFIG_DIR, else $XDG_CONFIG_HOME/jarvis, else ~/.config/jarvis;
// calibration/*.json) and applies to a trace that names the same host (CPU
// model, hostname and torch version) in its top-level "jarvis_host" member,
// which the traces of `jarvis ab` and `jarvis calibrate` carry (Kineto's
// own metadata names no host). A forced calibration file applies to every
// trace of the process (`--calibration FILE`).
#pragma once

#include <optional>
#include <string>

#include "base/error.h"
#include "trace/trace.h"

namespace jarvis::critical_path {

// A calibration file that cannot be read or is not one (names the file).
class CalibrationError : public ErrorOf<ErrorKind::InvalidInput> {
 public:
  using ErrorOf::ErrorOf;
};

struct ProfilerCostModel {
  // Costs in op gaps; the defaults are the built-in fit on ../shared/ab_pairs.
  double op_gaps = 3.1;                // an op, without record_shapes
  double shapes_op_gaps = 0.21;        // an op, with record_shapes ...
  double shapes_input_gaps = 0.98;     // ... and each of its recorded inputs
  double runtime_call_gaps = 1.0;      // a CUDA / HIP runtime call
  double python_frame_gaps = 1.0;      // a Python frame (with_stack)
  double xla_python_frame_gaps = 0.5;  // a Python frame of XProf's tracer
  double memory_event_gaps = 1.4;      // a [memory] event (profile_memory)
  // The op gap of a trace whose own cannot be measured (a profiler without
  // Kineto records whole microseconds, so back-to-back ops show no gap): 0
  // keeps the built-in defaults (2.2 us with record_shapes, else 1.2 us).
  double fallback_op_gap_us = 0;
  // Which calibration this is, in words: "built-in", or "this host's
  // (<file>, <date>)", or "forced (<file>)".
  std::string source = "built-in";
};

// The host a calibration or a trace names.
struct HostKey {
  std::string hostname, cpu_model, torch;
  bool operator==(const HostKey&) const = default;
};

// The host a trace was recorded on: its top-level jarvis_host member;
// nullopt when it names none.
std::optional<HostKey> trace_host(const Trace& trace);

// The folder calibrations are stored in (not created here).
std::string calibration_dir();

// A calibration file's model and host; throws CalibrationError naming the
// file when it is not one.
struct StoredCalibration {
  HostKey host;
  std::string date;
  ProfilerCostModel model;
};
StoredCalibration read_calibration(const std::string& path);

// Every trace of this process uses this file's model ("" again: by host).
// Throws as read_calibration.
void force_calibration(const std::string& path);

// The model for a trace: the forced one (force_calibration, else the file
// named by $JARVIS_CALIBRATION; throws CalibrationError when that file is not
// a calibration), else the newest calibration stored for the host the trace
// names, else the built-in one.
ProfilerCostModel profiler_cost_model_for(const Trace& trace);

}  // namespace jarvis::critical_path
