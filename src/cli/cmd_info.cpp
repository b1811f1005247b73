// jarvis info TRACE: a short summary of a trace (Kineto or rocprofv3).
#include <fmt/format.h>

#include <memory>

#include "cli/commands.h"
#include "cli/options.h"
#include "engine/engine.h"

namespace jarvis::cli {
namespace {

// The short source names of `info` and the Python API's Trace.source.
std::string_view source_name(InputFormat format) {
  switch (format) {
    case InputFormat::KinetoJson:
      return "kineto";
    case InputFormat::RocprofJson:
    case InputFormat::RocprofCsv:
      return "rocprofv3";
    case InputFormat::NsysSqlite:
      return "nsys";
    case InputFormat::Xplane:
      return "xplane";
  }
  return "unknown";
}

void print_info(const Trace& trace, InputFormat format) {
  size_t counts[16] = {};
  for (const Event& e : trace.events) counts[static_cast<size_t>(e.cat)]++;
  fmt::print("trace:      {}\n", trace.path);
  fmt::print("platform:   {}\n", platform_name(trace.platform));
  fmt::print("source:     {}\n", source_name(format));
  fmt::print("format:     {}\n", engine::input_format_name(format));
  std::string gpu = trace.gpu_name();
  fmt::print("gpu:        {}\n", gpu.empty() ? "unknown" : gpu);
  fmt::print("events:     {}\n", trace.events.size());
  fmt::print("cpu_op:     {}\n", counts[static_cast<size_t>(Cat::CpuOp)]);
  fmt::print("python:     {}\n", counts[static_cast<size_t>(Cat::PythonFunction)]);
  fmt::print("runtime:    {}\n", counts[static_cast<size_t>(Cat::CudaRuntime)] +
                                     counts[static_cast<size_t>(Cat::CudaDriver)]);
  fmt::print("kernels:    {}\n", counts[static_cast<size_t>(Cat::Kernel)]);
  fmt::print("memcpy:     {}\n", counts[static_cast<size_t>(Cat::GpuMemcpy)]);
  fmt::print("memset:     {}\n", counts[static_cast<size_t>(Cat::GpuMemset)]);
  // What the byte count measures: the JSON text parsed (decompressed), or
  // the protobuf / database the other readers decode.
  const char* bytes_label = format == InputFormat::Xplane       ? "protobuf bytes"
                            : format == InputFormat::NsysSqlite ? "sqlite bytes"
                                                                : "json bytes";
  fmt::print("{}: {}\n", bytes_label, trace.json_bytes);
}

}  // namespace

Runner add_info(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("info", "short summary of a trace (events, GPU, platform)");
  cmd->add_option("TRACE", *path,
                  "a trace: Kineto (.json/.json.gz), rocprofv3 output, XPlane (.xplane.pb) or an "
                  "Nsight Systems SQLite export")
      ->required();
  return [path] {
    // Every input format goes through its reader into the same event store.
    InputFormat format = engine::detect_input_format(*path);
    Trace trace = format == InputFormat::KinetoJson
                      ? engine::load_trace(*path)
                      : engine::load_non_kineto_input(*path, format).trace;
    print_info(trace, format);
    return 0;
  };
}

}  // namespace jarvis::cli
