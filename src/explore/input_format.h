// The one place that decides what an input file is and reads it into the
// event model. Every command and tool that takes a trace asks here, so a new
// reader is one row in input_format.cpp's table, not a branch copied across
// the trace store, `info`, `report`, the sweep runner and compare.
//
// Formats are judged by content, in a fixed order (the most specific sniffer
// first, as Perfetto's trace-type detection does); Kineto JSON is what is
// left, and its loader names the problem when it is not JSON either.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.h"

namespace jarvis {

class LoadedTrace;

enum class InputFormat {
  KinetoJson,   // PyTorch profiler / Kineto trace (.json, .json.gz)
  RocprofJson,  // rocprofv3 results file (--output-format json)
  RocprofCsv,   // rocprofv3 CSV set (a directory or one of its CSVs)
  Xplane,       // XSpace protobuf written by jax.profiler / XProf (.xplane.pb)
  NsysSqlite,   // Nsight Systems SQLite export (nsys export --type sqlite)
};

std::string_view input_format_name(InputFormat format);

// What `path` holds. Throws TraceError for an unreadable path and for inputs
// known but not read directly (a .nsys-rep report, a rocprofv3 .pftrace),
// with the command that makes a readable one.
InputFormat detect_input_format(const std::string& path);

// A non-Kineto input read into the event model, with what its format keeps
// beside the trace for its own tools (the rocprofv3 profile for the
// counter and kernel-details tools); `attach` may be empty.
struct LoadedInput {
  Trace trace;
  std::function<void(const LoadedTrace&)> attach;
};
// Throws TraceError for KinetoJson (the Kineto loader, with its snapshot
// cache, reads those) and for a file its format's reader refuses.
LoadedInput load_non_kineto_input(const std::string& path, InputFormat format);

// Any input with host ops as a Trace, for the commands that need them:
// Kineto through load_trace (snapshot cache included), Nsight Systems and
// XPlane through their readers; rocprofv3 output (kernels only) is refused
// by load_trace with the commands that read it.
Trace load_any_trace(const std::string& path);

// The rank traces an input holds, for the multi-rank analyses (critical
// path, collectives): an Nsight Systems capture of several GPU processes is
// one Trace per process (nsys::to_rank_traces); any other input is
// load_any_trace(path) alone.
std::vector<Trace> load_rank_traces(const std::string& path);

}  // namespace jarvis
