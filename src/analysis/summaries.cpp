#include "analysis/summaries.h"

namespace jarvis::analysis {

nlohmann::json trace_overview(const LoadedTrace& entry) {
  const Trace& trace = entry.trace();
  std::map<std::string, int64_t> counts = {
      {"cpu_op", 0},       {"python_function", 0}, {"user_annotation", 0}, {"gpu_user_annotation", 0},
      {"cuda_runtime", 0}, {"cuda_driver", 0},     {"kernel", 0},          {"gpu_memcpy", 0},
      {"gpu_memset", 0},   {"other", 0}};
  for (const Event& e : trace.events) {
    switch (e.cat) {
      case Cat::CpuOp: counts["cpu_op"]++; break;
      case Cat::PythonFunction: counts["python_function"]++; break;
      case Cat::UserAnnotation: counts["user_annotation"]++; break;
      case Cat::GpuUserAnnotation: counts["gpu_user_annotation"]++; break;
      case Cat::CudaRuntime: counts["cuda_runtime"]++; break;
      case Cat::CudaDriver: counts["cuda_driver"]++; break;
      case Cat::Kernel: counts["kernel"]++; break;
      case Cat::GpuMemcpy: counts["gpu_memcpy"]++; break;
      case Cat::GpuMemset: counts["gpu_memset"]++; break;
      default: counts["other"]++; break;
    }
  }
  nlohmann::json events(counts);
  events["total"] = static_cast<int64_t>(trace.events.size());
  return {{"trace", entry.handle()},
          {"path", entry.path()},
          {"platform", platform_name(trace.platform)},
          {"gpu_name", trace.gpu_name()},
          {"file_bytes", entry.file_size()},
          {"json_bytes", trace.json_bytes},
          {"load_seconds", entry.load_seconds()},
          {"events", events}};
}

}  // namespace jarvis::analysis
