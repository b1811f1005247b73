#include "rocprof/profile.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "rocprof/io.h"

namespace jarvis::rocprof {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kToolKey = "rocprofiler-sdk-tool";

bool is_csv_set_file(std::string_view name) {
  for (std::string_view suffix : {"kernel_trace.csv", "agent_info.csv", "counter_collection.csv",
                                  "kernel_stats.csv", "memory_copy_trace.csv"})
    if (name.ends_with(suffix)) return true;
  return false;
}

bool dir_has_csv_set(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.ends_with("kernel_trace.csv") || name.ends_with("counter_collection.csv")) return true;
  }
  return false;
}

// The results file's first member is the tool object: `{"rocprofiler-sdk-tool"`
// after optional whitespace.
bool starts_with_tool_key(std::string_view text) {
  size_t k = text.find_first_not_of(" \t\r\n");
  if (k == std::string_view::npos || text[k] != '{') return false;
  k = text.find_first_not_of(" \t\r\n", k + 1);
  return k != std::string_view::npos &&
         text.substr(k, kToolKey.size() + 2) == "\"rocprofiler-sdk-tool\"";
}

}  // namespace

const Agent* Profile::agent(int64_t handle) const {
  for (const Agent& a : agents)
    if (a.handle == handle) return &a;
  return nullptr;
}

const Agent* Profile::main_gpu() const {
  for (const Dispatch& d : dispatches)
    if (const Agent* a = agent(d.agent); a && a->gpu) return a;
  for (const Agent& a : agents)
    if (a.gpu) return &a;
  return nullptr;
}

InputKind detect_input(const std::string& path) {
  std::error_code ec;
  fs::path p(path);
  if (fs::is_directory(p, ec)) return dir_has_csv_set(p) ? InputKind::CsvSet : InputKind::Other;
  std::string name = p.filename().string();
  if (name.ends_with(".pftrace"))
    throw TraceError(path +
                     ": rocprofv3 Perfetto output (.pftrace) is not supported; rerun rocprofv3 "
                     "with --output-format json (or csv) and pass the *_results.json or the CSV "
                     "directory");
  if (name.ends_with(".csv")) return is_csv_set_file(name) ? InputKind::CsvSet : InputKind::Other;
  return starts_with_tool_key(io::peek_text(path, 4096)) ? InputKind::Json : InputKind::Other;
}

Profile load_profile(const std::string& path) {
  std::error_code ec;
  fs::path p(path);
  if (fs::is_directory(p, ec) || p.filename().string().ends_with(".csv"))
    return load_profile_csv(path);
  if (p.filename().string().ends_with(".pftrace")) detect_input(path);  // throws the message
  return load_profile_json(path);
}

namespace {

// The GPU's rank among the GPU agents (the device index PyTorch would show).
int64_t device_index(const Profile& p, int64_t agent_handle) {
  int64_t rank = 0;
  for (const Agent& a : p.agents) {
    if (!a.gpu) continue;
    if (a.handle == agent_handle) return rank;
    ++rank;
  }
  return agent_handle;
}

EventFields gpu_event(Trace& trace, std::string_view name, std::string_view cat, Cat c,
                      int64_t start_ns, int64_t end_ns, int64_t stream, int64_t device) {
  EventFields e;
  e.ts_ns = start_ns;
  e.dur_ns = end_ns - start_ns;
  e.name = trace.strings.intern(name);
  e.cat_name = trace.strings.intern(cat);
  e.cat = c;
  e.ph = Phase::Complete;
  e.stream = stream;
  e.device = device;
  e.pid = ProcId{device, false};
  e.tid = ProcId{stream, false};
  return e;
}

}  // namespace

Trace to_trace(const Profile& profile) {
  Trace trace;
  trace.path = profile.path;
  trace.platform = Platform::Rocm;
  trace.events.reserve(profile.dispatches.size() + profile.copies.size());
  for (const Dispatch& d : profile.dispatches) {
    EventFields e = gpu_event(trace, profile.kernel_name(d), "kernel", Cat::Kernel, d.start_ns,
                              d.end_ns, d.stream, device_index(profile, d.agent));
    e.correlation = d.correlation_id;
    trace.add_event(e);
  }
  for (const MemoryCopy& c : profile.copies) {
    const Agent* dst = profile.agent(c.dst_agent);
    int64_t device = dst && dst->gpu ? c.dst_agent : c.src_agent;
    trace.add_event(gpu_event(trace, c.direction.empty() ? "MEMORY_COPY" : c.direction,
                              "gpu_memcpy", Cat::GpuMemcpy, c.start_ns, c.end_ns, c.stream,
                              device_index(profile, device)));
  }
  nlohmann::json tool = {{"source", "rocprofv3"},
                         {"format", profile.format},
                         {"pid", profile.pid},
                         {"hostname", profile.hostname},
                         {"dispatches", profile.dispatches.size()},
                         {"counter_samples", profile.counters.size()}};
  trace.top_level_json.emplace_back(std::string(kToolKey), tool.dump());
  if (const Agent* gpu = profile.main_gpu()) {
    std::string name = gpu->product_name.empty() ? gpu->name : gpu->product_name;
    trace.top_level_json.emplace_back(
        "deviceProperties", nlohmann::json::array({{{"name", name}, {"gfx", gpu->name}}}).dump());
  }
  trace.json_bytes = profile.input_bytes;
  trace.file_bytes = profile.file_bytes;
  return trace;
}

bool is_rocprof_trace(const Trace& trace) {
  for (const auto& [key, _] : trace.top_level_json)
    if (key == kToolKey) return true;
  return false;
}

}  // namespace jarvis::rocprof
