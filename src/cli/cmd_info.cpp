#include <fmt/format.h>
#include <cstdio>

#include "cli/commands.h"
#include "rocprof/profile.h"
#include "trace/loader.h"

namespace jarvis::cli {

int cmd_info(const Args& args) {
  auto pos = positionals(args, {});
  if (pos.size() != 1) {
    std::fprintf(stderr, "usage: jarvis info TRACE\n");
    return 2;
  }
  // rocprofv3 output goes through its own reader into the same event store.
  bool rocprof = rocprof::is_rocprof_input(pos[0]);
  Trace trace = rocprof ? rocprof::to_trace(rocprof::load_profile(pos[0])) : load_trace(pos[0]);
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
  return 0;
}

}  // namespace jarvis::cli
