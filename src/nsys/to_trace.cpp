// to_trace: the export's rows as the events a Kineto trace of the same run
// would hold (names, categories, rows, args), so every analysis of the event
// model applies unchanged. The mapping is documented in export.h.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "nsys/emit_nvtx.h"
#include "nsys/export.h"

namespace jarvis::nsys {

namespace {

constexpr std::string_view kSourceKey = "nsys_export";

// ENUM_CUDA_MEMCPY_OPER -> Kineto's direction text.
std::string_view copy_direction(int kind) {
  static constexpr std::string_view kNames[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH",
                                                "AtoA",    "AtoD", "DtoA", "DtoD", "HtoH",
                                                "PtoP",    "HtoD", "DtoH", "DtoD"};
  return kind >= 0 && kind < static_cast<int>(std::size(kNames)) ? kNames[kind] : "Unknown";
}

// ENUM_CUDA_MEM_KIND -> Kineto's memory kind text.
std::string_view memory_kind(int kind) {
  static constexpr std::string_view kNames[] = {"Pageable",       "Pinned",  "Device",
                                                "Array",          "Managed", "Device Static",
                                                "Managed Static", "Unknown"};
  return kind >= 0 && kind < static_cast<int>(std::size(kNames)) ? kNames[kind] : "Unknown";
}

// ENUM_CUPTI_SYNC_TYPE -> Kineto's cuda_sync event names.
std::string_view sync_name(int type) {
  switch (type) {
    case 1:
      return "Event Sync";
    case 2:
      return "Stream Wait Event";
    case 3:
      return "Stream Sync";
    case 4:
      return "Context Sync";
    default:
      return "Unknown Sync";
  }
}

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" (the name Kineto records
// and the analyses look for).
std::string_view api_name(std::string_view name) {
  size_t v = name.rfind("_v");
  if (v == std::string_view::npos || v + 2 >= name.size()) return name;
  for (size_t i = v + 2; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  return name.substr(0, v);
}

class Builder {
 public:
  // only_pid: the OS process whose rows are kept (-1: every process).
  Builder(const Export& ex, Trace& trace, int64_t only_pid)
      : ex_(ex), t_(trace), only_pid_(only_pid) {
    // Correlation ids are per process: several processes in one capture
    // (one per rank) may reuse them, so the link gets the process in its
    // high bits then.
    std::set<int64_t> pids;
    for (const Kernel& k : ex.kernels) pids.insert(pid_of(k.global_pid));
    for (const RuntimeCall& c : ex.runtime) pids.insert(pid_of(c.global_tid));
    per_process_links_ = pids.size() > 1;
    cat_kernel_ = t_.strings.intern("kernel");
    cat_memcpy_ = t_.strings.intern("gpu_memcpy");
    cat_memset_ = t_.strings.intern("gpu_memset");
    cat_sync_ = t_.strings.intern("cuda_sync");
    cat_runtime_ = t_.strings.intern("cuda_runtime");
    cat_op_ = t_.strings.intern("cpu_op");
    cat_annotation_ = t_.strings.intern("user_annotation");
    key_grid_ = t_.strings.intern("grid");
    key_block_ = t_.strings.intern("block");
    key_registers_ = t_.strings.intern("registers per thread");
    key_shared_ = t_.strings.intern("shared memory");
    key_bytes_ = t_.strings.intern("bytes");
    key_dims_ = t_.strings.intern("Input Dims");
  }

  bool kept(int64_t global_id) const { return only_pid_ < 0 || pid_of(global_id) == only_pid_; }

  int64_t link(int64_t pid, int64_t correlation) const {
    if (correlation == kNoInt || !per_process_links_) return correlation;
    return (pid << 32) | (correlation & 0xFFFFFFFF);
  }

  EventFields gpu(std::string_view name, uint32_t cat_name, Cat cat, int64_t start, int64_t end,
                  int64_t device, int64_t stream) {
    EventFields e;
    e.ts_ns = start;
    e.dur_ns = std::max<int64_t>(0, end - start);
    e.name = t_.strings.intern(name);
    e.cat_name = cat_name;
    e.cat = cat;
    e.ph = Phase::Complete;
    e.device = device;
    e.stream = stream;
    e.pid = ProcId{device, false};
    e.tid = ProcId{stream, false};
    e.has_args = true;
    return e;
  }

  // Equal arg lists share one entry (as the Kineto loader shares them).
  int32_t args(const std::string& key, ArgList list) {
    auto [it, fresh] = arg_index_.emplace(key, static_cast<int32_t>(t_.arg_lists.size()));
    if (fresh) t_.arg_lists.push_back(std::move(list));
    return it->second;
  }

  static PyValue dim3(const int32_t (&v)[3]) {
    return PyValue::make_list(
        {PyValue::integer(v[0]), PyValue::integer(v[1]), PyValue::integer(v[2])});
  }

  void kernels() {
    for (const Kernel& k : ex_.kernels) {
      if (!kept(k.global_pid)) continue;
      std::string_view name = ex_.string(k.demangled_name);
      if (name.empty()) name = ex_.string(k.short_name);
      EventFields e =
          gpu(name, cat_kernel_, Cat::Kernel, k.start_ns, k.end_ns, k.device_id, k.stream_id);
      e.correlation = link(pid_of(k.global_pid), k.correlation_id);
      std::string key =
          fmt::format("k{},{},{}/{},{},{}/{}/{}", k.grid[0], k.grid[1], k.grid[2], k.block[0],
                      k.block[1], k.block[2], k.registers_per_thread, k.shared_memory_bytes);
      e.args = args(key, {{key_grid_, dim3(k.grid)},
                          {key_block_, dim3(k.block)},
                          {key_registers_, PyValue::integer(k.registers_per_thread)},
                          {key_shared_, PyValue::integer(k.shared_memory_bytes)}});
      t_.add_event(e);
    }
  }

  void memory_ops() {
    for (const MemoryOp& m : ex_.memcpys) {
      if (!kept(m.global_pid)) continue;
      std::string name = fmt::format("Memcpy {} ({} -> {})", copy_direction(m.copy_kind),
                                     memory_kind(m.src_kind), memory_kind(m.dst_kind));
      EventFields e =
          gpu(name, cat_memcpy_, Cat::GpuMemcpy, m.start_ns, m.end_ns, m.device_id, m.stream_id);
      e.correlation = link(pid_of(m.global_pid), m.correlation_id);
      e.args = args(fmt::format("b{}", m.bytes), {{key_bytes_, PyValue::integer(m.bytes)}});
      t_.add_event(e);
    }
    for (const MemoryOp& m : ex_.memsets) {
      if (!kept(m.global_pid)) continue;
      std::string name = fmt::format("Memset ({})", memory_kind(m.dst_kind));
      EventFields e =
          gpu(name, cat_memset_, Cat::GpuMemset, m.start_ns, m.end_ns, m.device_id, m.stream_id);
      e.correlation = link(pid_of(m.global_pid), m.correlation_id);
      e.args = args(fmt::format("b{}", m.bytes), {{key_bytes_, PyValue::integer(m.bytes)}});
      t_.add_event(e);
    }
  }

  void syncs() {
    for (const Synchronization& y : ex_.syncs) {
      if (!kept(y.global_pid)) continue;
      EventFields e = gpu(sync_name(y.sync_type), cat_sync_, Cat::Other, y.start_ns, y.end_ns,
                          y.device_id, y.stream_id);
      e.correlation = link(pid_of(y.global_pid), y.correlation_id);
      t_.add_event(e);
    }
  }

  EventFields host(std::string_view name, uint32_t cat_name, Cat cat, int64_t start, int64_t end,
                   int64_t global_tid) {
    EventFields e;
    e.ts_ns = start;
    e.dur_ns = std::max<int64_t>(0, end - start);
    e.name = t_.strings.intern(name);
    e.cat_name = cat_name;
    e.cat = cat;
    e.ph = Phase::Complete;
    e.pid = ProcId{pid_of(global_tid), false};
    e.tid = ProcId{tid_of(global_tid), false};
    host_threads_.insert(global_tid);
    return e;
  }

  void runtime() {
    for (const RuntimeCall& c : ex_.runtime) {
      if (!kept(c.global_tid)) continue;
      EventFields e = host(api_name(ex_.string(c.name)), cat_runtime_, Cat::CudaRuntime, c.start_ns,
                           c.end_ns, c.global_tid);
      e.correlation = link(pid_of(c.global_tid), c.correlation_id);
      e.has_args = true;
      t_.add_event(e);
    }
  }

  void nvtx() {
    for (const NvtxRange& n : ex_.nvtx) {
      if (!kept(n.global_tid)) continue;
      auto op = parse_emit_nvtx(n.text);
      if (!op) {
        t_.add_event(
            host(n.text, cat_annotation_, Cat::UserAnnotation, n.start_ns, n.end_ns, n.global_tid));
        continue;
      }
      EventFields e = host(op->name, cat_op_, Cat::CpuOp, n.start_ns, n.end_ns, n.global_tid);
      e.has_args = true;
      if (op->seq >= 0) e.sequence_number = op->seq;
      if (op->sizes) {
        std::vector<PyValue> inputs;
        std::string key = "d";
        for (const auto& dims : *op->sizes) {
          std::vector<PyValue> items;
          for (int64_t d : dims) {
            items.push_back(PyValue::integer(d));
            key += fmt::format("{},", d);
          }
          key += ';';
          inputs.push_back(PyValue::make_list(std::move(items)));
        }
        e.args = args(key, {{key_dims_, PyValue::make_list(std::move(inputs))}});
      }
      t_.add_event(e);
    }
  }

  void metadata() {
    for (int64_t global_tid : host_threads_) {
      ProcId pid{pid_of(global_tid), false}, tid{tid_of(global_tid), false};
      if (auto p = ex_.process_names.find(pid.value); p != ex_.process_names.end())
        t_.metadata.process_name[pid] = p->second;
      if (auto th = ex_.thread_names.find(global_tid); th != ex_.thread_names.end())
        t_.metadata.thread_name[{pid, tid}] = th->second;
    }
  }

 private:
  const Export& ex_;
  Trace& t_;
  int64_t only_pid_ = -1;
  bool per_process_links_ = false;
  uint32_t cat_kernel_, cat_memcpy_, cat_memset_, cat_sync_, cat_runtime_, cat_op_, cat_annotation_;
  uint32_t key_grid_, key_block_, key_registers_, key_shared_, key_bytes_, key_dims_;
  std::unordered_map<std::string, int32_t> arg_index_;
  std::set<int64_t> host_threads_;
};

}  // namespace

namespace {

// The trace of one process (only_pid >= 0, rank `rank` of `world`) or of the
// whole capture (only_pid < 0).
Trace build_trace(const Export& ex, int64_t only_pid, int64_t rank, int64_t world) {
  Trace trace;
  trace.path = ex.path;
  trace.platform = Platform::Cuda;
  trace.events.reserve(ex.kernels.size() + ex.memcpys.size() + ex.memsets.size() + ex.syncs.size() +
                       ex.runtime.size() + ex.nvtx.size());
  Builder b(ex, trace, only_pid);
  b.kernels();
  b.memory_ops();
  b.syncs();
  b.runtime();
  b.nvtx();
  b.metadata();

  std::set<int64_t> devices, pids;
  size_t kernels = 0;
  for (const Kernel& k : ex.kernels) {
    if (only_pid >= 0 && pid_of(k.global_pid) != only_pid) continue;
    devices.insert(k.device_id);
    pids.insert(pid_of(k.global_pid));
    ++kernels;
  }
  nlohmann::json source = {{"source", "nsys"},
                           {"schema_version", ex.schema_version},
                           {"product_version", ex.product_version},
                           {"devices", devices},
                           {"processes", pids},
                           {"kernels", kernels},
                           {"nvtx_ranges", ex.nvtx.size()}};
  if (only_pid >= 0) source["rank_of_capture"] = {{"process", only_pid}, {"rank", rank}};
  trace.top_level_json.emplace_back(std::string(kSourceKey), source.dump());
  // A process of a multi-process capture is a rank: the same member a Kineto
  // trace of that rank carries, so the multi-rank analyses read it as theirs.
  if (only_pid >= 0)
    trace.top_level_json.emplace_back("distributedInfo",
                                      nlohmann::json{{"rank", rank}, {"world_size", world}}.dump());
  if (!ex.gpu_names.empty()) {
    std::map<int64_t, std::string> by_id(ex.gpu_names.begin(), ex.gpu_names.end());
    nlohmann::json props = nlohmann::json::array();
    for (const auto& [id, name] : by_id)
      if (only_pid < 0 || devices.count(id)) props.push_back({{"id", id}, {"name", name}});
    trace.top_level_json.emplace_back("deviceProperties", props.dump());
  }
  trace.file_bytes = ex.file_bytes;
  trace.json_bytes = ex.file_bytes;
  trace.shrink_side_tables();
  return trace;
}

}  // namespace

Trace to_trace(const Export& ex) {
  return build_trace(ex, -1, -1, -1);
}

std::vector<RankProcess> rank_processes(const Export& ex) {
  // Each process's lowest device and its GPU work.
  std::map<int64_t, RankProcess> by_pid;
  auto note = [&](int64_t global_pid, int64_t device) {
    auto [it, fresh] = by_pid.try_emplace(pid_of(global_pid));
    RankProcess& p = it->second;
    if (fresh) {
      p.pid = pid_of(global_pid);
      p.first_device = device;
    }
    p.first_device = std::min(p.first_device, device);
    p.devices.insert(device);
  };
  for (const Kernel& k : ex.kernels) note(k.global_pid, k.device_id);
  for (const MemoryOp& m : ex.memcpys) note(m.global_pid, m.device_id);
  for (const MemoryOp& m : ex.memsets) note(m.global_pid, m.device_id);
  std::vector<RankProcess> out;
  for (auto& [pid, p] : by_pid) out.push_back(std::move(p));
  std::sort(out.begin(), out.end(), [](const RankProcess& a, const RankProcess& b) {
    return std::tie(a.first_device, a.pid) < std::tie(b.first_device, b.pid);
  });
  for (size_t r = 0; r < out.size(); ++r) out[r].rank = static_cast<int64_t>(r);
  return out;
}

std::vector<Trace> to_rank_traces(const Export& ex) {
  std::vector<RankProcess> ranks = rank_processes(ex);
  std::vector<Trace> out;
  if (ranks.size() <= 1) {
    out.push_back(to_trace(ex));
    return out;
  }
  for (const RankProcess& p : ranks)
    out.push_back(build_trace(ex, p.pid, p.rank, static_cast<int64_t>(ranks.size())));
  return out;
}

bool is_nsys_trace(const Trace& trace) {
  for (const auto& [key, _] : trace.top_level_json)
    if (key == kSourceKey) return true;
  return false;
}

}  // namespace jarvis::nsys
