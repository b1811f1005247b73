// jarvis info TRACE: a short summary of a trace (Kineto or rocprofv3).
#include <fmt/format.h>

#include <memory>

#include "cli/commands.h"
#include "cli/options.h"
#include "engine/engine.h"

namespace jarvis::cli {
namespace {

void print_info(const Trace& trace, bool rocprof) {
  size_t counts[16] = {};
  for (const Event& e : trace.events) counts[static_cast<size_t>(e.cat)]++;
  fmt::print("trace:      {}\n", trace.path);
  fmt::print("platform:   {}\n", platform_name(trace.platform));
  fmt::print("source:     {}\n", rocprof ? "rocprofv3" : "kineto");
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
  fmt::print("json bytes: {}\n", trace.json_bytes);
}

}  // namespace

Runner add_info(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("info", "short summary of a trace (events, GPU, platform)");
  cmd->add_option("TRACE", *path, "Kineto trace (.json/.json.gz) or rocprofv3 output")->required();
  return [path] {
    // rocprofv3 output goes through its own reader into the same event store.
    bool rocprof = engine::is_rocprof_input(*path);
    Trace trace =
        rocprof ? engine::rocprof_to_trace(engine::load_profile(*path)) : engine::load_trace(*path);
    print_info(trace, rocprof);
    return 0;
  };
}

}  // namespace jarvis::cli
