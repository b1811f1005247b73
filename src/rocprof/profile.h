// rocprofv3 (ROCprofiler-SDK) input: the kernel dispatches, memory copies,
// agents and hardware counters of one profiled process, read from either of
// the tool's outputs:
//   * the JSON results file (<pid>_results.json[.gz], top-level member
//     "rocprofiler-sdk-tool"), as TraceLens's rocprof report reads it;
//   * the CSV set of one process (<pid>_kernel_trace.csv, _agent_info.csv,
//     _counter_collection.csv, _kernel_stats.csv, _memory_copy_trace.csv),
//     given as its directory or as any one of its files.
// Timestamps stay integer nanoseconds, as rocprofv3 writes them, so the
// TraceLens tables can redo its arithmetic exactly. Perfetto (.pftrace)
// output is not read (a clear error says so).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.h"

namespace jarvis::rocprof {

struct Dim3 {
  int64_t x = 1, y = 1, z = 1;
  int64_t product() const { return x * y * z; }
};

// One CPU or GPU agent (agent_info.csv row / "agents" entry).
struct Agent {
  int64_t handle = 0;  // JSON agent id handle; CSV: Node_Id
  int64_t node_id = 0;
  int64_t logical_node_id = 0;
  bool gpu = false;
  std::string name;          // gfx950
  std::string product_name;  // AMD Instinct MI350X
  int64_t cu_count = 0;
  int64_t simd_per_cu = 0;
  int64_t num_xcc = 1;
  int64_t wave_front_size = 64;
  int64_t max_waves_per_cu = 0;
  int64_t max_clock_mhz = 0;  // max_engine_clk_fcompute
};

// One kernel dispatch with its launch properties.
struct Dispatch {
  uint32_t kernel = 0;  // index into Profile::kernel_names
  int64_t kernel_id = 0;
  int64_t dispatch_id = 0;
  int64_t correlation_id = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t stream = 0;
  int64_t queue = 0;
  int64_t agent = 0;  // Agent::handle
  int64_t thread_id = 0;
  Dim3 grid;                  // work-items
  Dim3 workgroup;             // work-items per workgroup
  int64_t lds_bytes = 0;      // LDS_Block_Size / group_segment_size
  int64_t scratch_bytes = 0;  // Scratch_Size / private_segment_size
  int64_t arch_vgpr = 0;
  int64_t accum_vgpr = 0;
  int64_t sgpr = 0;
  int64_t duration_ns() const { return end_ns - start_ns; }
};

struct MemoryCopy {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t src_agent = 0;
  int64_t dst_agent = 0;
  int64_t stream = 0;
  std::string direction;  // MEMORY_COPY_HOST_TO_DEVICE, ... ("" when unknown)
};

// One counter value of one dispatch (a counter_collection.csv row).
struct CounterSample {
  size_t dispatch = 0;   // index into Profile::dispatches
  uint32_t counter = 0;  // index into Profile::counter_names
  double value = 0;
};

// One kernel_stats.csv row (rocprofv3's own per-kernel timing summary).
struct KernelStat {
  std::string name;
  int64_t calls = 0;
  double total_ns = 0;
  double average_ns = 0;
  double percentage = 0;
  double min_ns = 0;
  double max_ns = 0;
  double stddev_ns = 0;
};

struct Profile {
  std::string path;    // as given
  std::string format;  // "json" or "csv"
  int64_t pid = 0;
  std::string hostname;
  // Tool init / fini timestamps (JSON metadata); absent in the CSV set.
  std::optional<int64_t> init_ns, fini_ns;
  std::vector<Agent> agents;
  std::vector<std::string> kernel_names;  // distinct, first-seen order
  std::vector<Dispatch> dispatches;       // file order
  std::vector<MemoryCopy> copies;
  std::vector<std::string> counter_names;  // distinct, first-seen order
  std::vector<CounterSample> counters;     // file order
  std::vector<KernelStat> kernel_stats;
  uint64_t input_bytes = 0;  // bytes read (uncompressed)
  uint64_t file_bytes = 0;   // bytes on disk

  std::string_view kernel_name(const Dispatch& d) const { return kernel_names[d.kernel]; }
  const Agent* agent(int64_t handle) const;
  // The GPU the dispatches ran on (first GPU agent used), or nullptr.
  const Agent* main_gpu() const;
};

// What a path holds, judged by content for JSON and by name for CSV.
enum class InputKind { Other, Json, CsvSet };

// Json: a .json/.json.gz whose top-level object starts with
// "rocprofiler-sdk-tool"; CsvSet: a directory holding a rocprofv3
// *_kernel_trace.csv or *_counter_collection.csv, or one such CSV file.
// Throws TraceError for a .pftrace (unsupported rocprofv3 output).
InputKind detect_input(const std::string& path);
inline bool is_rocprof_input(const std::string& path) {
  return detect_input(path) != InputKind::Other;
}

// The rocprofv3 outputs in a directory (not recursive), sorted: every
// *_results.json[.gz] and, per CSV set, its kernel trace (or its counter file
// when the kernel trace is missing, so load_profile explains). A run
// directory's rocprof_traces/ holds one output per profiled process (rank).
std::vector<std::string> find_outputs(const std::string& dir);

// Reads a rocprofv3 JSON results file or CSV set. Throws TraceError naming
// the file and the problem (not rocprofv3, missing columns, a counter CSV
// without its kernel trace, ...).
Profile load_profile(const std::string& path);
Profile load_profile_json(const std::string& path);
Profile load_profile_json_text(std::string_view json, const std::string& label);
Profile load_profile_csv(const std::string& path);

// The engine's event store for a profile: one kernel event per dispatch
// (ts / dur in microseconds, stream, device = GPU logical node), one
// gpu_memcpy event per copy, platform ROCm, the GPU's product name as
// deviceProperties[0].name, and a top-level "rocprofiler-sdk-tool" member
// marking the source. There are no CPU ops: nothing links the kernels to
// host code.
Trace to_trace(const Profile& profile);

// True for a Trace made by to_trace.
bool is_rocprof_trace(const Trace& trace);

}  // namespace jarvis::rocprof
