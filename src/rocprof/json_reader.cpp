// The rocprofv3 JSON results file: rocprofiler-sdk-tool[0] with metadata,
// agents, kernel_symbols and buffer_records.{kernel_dispatch, memory_copy}.
// Field defaults follow TraceLens's RocprofParser (a missing stream is 0, a
// kernel id without symbol is named unknown_kernel_<id>, ...).
#include <simdjson.h>

#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "rocprof/io.h"
#include "rocprof/profile.h"

namespace jarvis::rocprof {

namespace {

using simdjson::dom::element;
using simdjson::dom::object;

int64_t int_or(element e, std::string_view key, int64_t fallback) {
  int64_t v;
  if (!e[key].get_int64().get(v)) return v;
  uint64_t u;
  if (!e[key].get_uint64().get(u)) return static_cast<int64_t>(u);
  double d;
  if (!e[key].get_double().get(d)) return static_cast<int64_t>(d);
  return fallback;
}

// {"handle": N} members (agent_id, queue_id, stream_id).
int64_t handle_or(element e, std::string_view key, int64_t fallback) {
  element inner;
  if (e[key].get(inner)) return fallback;
  return int_or(inner, "handle", fallback);
}

std::string string_or(element e, std::string_view key) {
  std::string_view s;
  return e[key].get_string().get(s) ? std::string() : std::string(s);
}

Dim3 dim3_of(element e, std::string_view key) {
  Dim3 d;
  element inner;
  if (e[key].get(inner)) return d;
  d.x = int_or(inner, "x", 1);
  d.y = int_or(inner, "y", 1);
  d.z = int_or(inner, "z", 1);
  return d;
}

struct Symbol {
  std::string name;
  int64_t sgpr = 0, arch_vgpr = 0, accum_vgpr = 0;
};

// TraceLens names a kernel by the first non-empty of truncated, formatted
// and raw kernel name.
std::string symbol_name(element s, int64_t id) {
  for (const char* key : {"truncated_kernel_name", "formatted_kernel_name"})
    if (auto n = string_or(s, key); !n.empty()) return n;
  std::string_view raw;
  if (!s["kernel_name"].get_string().get(raw)) return std::string(raw);
  return fmt::format("unknown_kernel_{}", id);
}

std::unordered_map<int64_t, Symbol> read_symbols(element tool) {
  std::unordered_map<int64_t, Symbol> out;
  simdjson::dom::array arr;
  if (tool["kernel_symbols"].get_array().get(arr)) return out;
  for (element s : arr) {
    int64_t id = int_or(s, "kernel_id", -1);
    out[id] = {symbol_name(s, id), int_or(s, "sgpr_count", 0), int_or(s, "arch_vgpr_count", 0),
               int_or(s, "accum_vgpr_count", 0)};
  }
  return out;
}

void read_agents(element tool, Profile& p) {
  simdjson::dom::array arr;
  if (tool["agents"].get_array().get(arr)) return;
  for (element a : arr) {
    Agent agent;
    agent.handle = handle_or(a, "id", 0);
    agent.node_id = int_or(a, "node_id", 0);
    agent.logical_node_id = int_or(a, "logical_node_id", agent.node_id);
    agent.gpu = int_or(a, "type", 0) == 2;  // ROCPROFILER_AGENT_TYPE_GPU
    agent.name = string_or(a, "name");
    agent.product_name = string_or(a, "product_name");
    agent.cu_count = int_or(a, "cu_count", 0);
    agent.simd_per_cu = int_or(a, "simd_per_cu", 0);
    agent.num_xcc = std::max<int64_t>(1, int_or(a, "num_xcc", 1));
    agent.wave_front_size = int_or(a, "wave_front_size", 64);
    agent.max_waves_per_cu = int_or(a, "max_waves_per_cu", 0);
    agent.max_clock_mhz = int_or(a, "max_engine_clk_fcompute", 0);
    p.agents.push_back(std::move(agent));
  }
}

void read_dispatches(const std::string& label, element records,
                     const std::unordered_map<int64_t, Symbol>& symbols, Profile& p) {
  simdjson::dom::array arr;
  if (records["kernel_dispatch"].get_array().get(arr)) return;
  std::unordered_map<std::string, uint32_t> name_index;
  size_t k = 0;
  for (element r : arr) {
    int64_t start, end;
    if (r["start_timestamp"].get_int64().get(start) || r["end_timestamp"].get_int64().get(end))
      throw TraceError(fmt::format(
          "{}: buffer_records.kernel_dispatch[{}] has no integer start_timestamp/end_timestamp",
          label, k));
    element info;
    if (r["dispatch_info"].get(info))
      throw TraceError(
          fmt::format("{}: buffer_records.kernel_dispatch[{}] has no dispatch_info", label, k));
    Dispatch d;
    d.start_ns = start;
    d.end_ns = end;
    d.kernel_id = int_or(info, "kernel_id", -1);
    auto sym = symbols.find(d.kernel_id);
    std::string name =
        sym != symbols.end() ? sym->second.name : fmt::format("unknown_kernel_{}", d.kernel_id);
    auto [it, added] = name_index.try_emplace(name, static_cast<uint32_t>(p.kernel_names.size()));
    if (added) p.kernel_names.push_back(name);
    d.kernel = it->second;
    d.dispatch_id = int_or(info, "dispatch_id", 0);
    d.agent = handle_or(info, "agent_id", 0);
    d.queue = handle_or(info, "queue_id", 0);
    d.stream = handle_or(r, "stream_id", 0);
    d.thread_id = int_or(r, "thread_id", 0);
    element corr;
    if (!r["correlation_id"].get(corr)) d.correlation_id = int_or(corr, "internal", 0);
    d.grid = dim3_of(info, "grid_size");
    d.workgroup = dim3_of(info, "workgroup_size");
    d.lds_bytes = int_or(info, "group_segment_size", 0);
    d.scratch_bytes = int_or(info, "private_segment_size", 0);
    if (sym != symbols.end()) {
      d.sgpr = sym->second.sgpr;
      d.arch_vgpr = sym->second.arch_vgpr;
      d.accum_vgpr = sym->second.accum_vgpr;
    }
    p.dispatches.push_back(d);
    ++k;
  }
}

std::string copy_direction(int64_t operation) {
  switch (operation) {  // rocprofiler_memory_copy_operation_t
    case 1:
      return "MEMORY_COPY_HOST_TO_HOST";
    case 2:
      return "MEMORY_COPY_HOST_TO_DEVICE";
    case 3:
      return "MEMORY_COPY_DEVICE_TO_HOST";
    case 4:
      return "MEMORY_COPY_DEVICE_TO_DEVICE";
    default:
      return "";
  }
}

void read_copies(element records, Profile& p) {
  simdjson::dom::array arr;
  if (records["memory_copy"].get_array().get(arr)) return;
  for (element r : arr) {
    MemoryCopy c;
    c.start_ns = int_or(r, "start_timestamp", 0);
    c.end_ns = int_or(r, "end_timestamp", 0);
    c.src_agent = handle_or(r, "src_agent_id", 0);
    c.dst_agent = handle_or(r, "dst_agent_id", 0);
    c.stream = handle_or(r, "stream_id", 0);
    c.direction = copy_direction(int_or(r, "operation", 0));
    p.copies.push_back(std::move(c));
  }
}

// callback_records.counter_collection: per dispatch, records of (counter id,
// value), one per counter instance; values of one counter are summed per
// dispatch, as rocprofv3's CSV writer does. Counter names come from the
// top-level "counters" list.
void read_counters(const std::string& label, element tool, Profile& p) {
  simdjson::dom::array records;
  if (tool["callback_records"]["counter_collection"].get_array().get(records) ||
      records.size() == 0)
    return;
  std::unordered_map<int64_t, std::string> names;
  simdjson::dom::array infos;
  if (!tool["counters"].get_array().get(infos))
    for (element c : infos) names[handle_or(c, "id", -1)] = string_or(c, "name");
  std::unordered_map<int64_t, size_t> by_dispatch;
  for (size_t k = 0; k < p.dispatches.size(); ++k) by_dispatch[p.dispatches[k].dispatch_id] = k;
  std::unordered_map<std::string, uint32_t> name_index;
  size_t k = 0;
  for (element r : records) {
    int64_t id = int_or(r["dispatch_data"]["dispatch_info"], "dispatch_id", -1);
    auto it = by_dispatch.find(id);
    if (it == by_dispatch.end())
      throw TraceError(fmt::format(
          "{}: callback_records.counter_collection[{}]: dispatch {} has no kernel_dispatch "
          "record; run rocprofv3 with --kernel-trace as well as --pmc",
          label, k, id));
    std::map<int64_t, double> sums;
    simdjson::dom::array values;
    if (!r["records"].get_array().get(values))
      for (element v : values) {
        double x;
        if (v["value"].get_double().get(x)) x = static_cast<double>(int_or(v, "value", 0));
        sums[handle_or(v, "counter_id", -1)] += x;
      }
    for (const auto& [cid, value] : sums) {
      auto n = names.find(cid);
      std::string name = n != names.end() ? n->second : fmt::format("counter_{}", cid);
      auto [ni, added] =
          name_index.try_emplace(name, static_cast<uint32_t>(p.counter_names.size()));
      if (added) p.counter_names.push_back(name);
      p.counters.push_back({it->second, ni->second, value});
    }
    ++k;
  }
}

[[noreturn]] void not_rocprof(const std::string& label, object top) {
  bool kineto = false;
  for (auto field : top) kineto |= field.key == "traceEvents";
  throw TraceError(
      fmt::format("{}: not a rocprofv3 results file: no top-level 'rocprofiler-sdk-tool' member{}",
                  label, kineto ? " (it holds 'traceEvents': a PyTorch profiler trace)" : ""));
}

}  // namespace

Profile load_profile_json_text(std::string_view json, const std::string& label) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  element doc;
  if (auto err = parser.parse(padded).get(doc))
    throw TraceError(fmt::format("{}: not valid JSON ({})", label, simdjson::error_message(err)));
  object top;
  if (doc.get_object().get(top))
    throw TraceError(label + ": top-level JSON value is not an object");
  simdjson::dom::array tools;
  element tool_member;
  if (top["rocprofiler-sdk-tool"].get(tool_member)) not_rocprof(label, top);
  if (tool_member.get_array().get(tools) || tools.size() == 0)
    throw TraceError(label + ": 'rocprofiler-sdk-tool' is not a non-empty array");
  element tool = tools.at(0).value_unsafe();
  element records;
  if (tool["buffer_records"].get(records) || !records.is_object())
    throw TraceError(label + ": rocprofiler-sdk-tool[0] has no 'buffer_records' object");

  Profile p;
  p.path = label;
  p.format = "json";
  p.input_bytes = json.size();
  element meta;
  if (!tool["metadata"].get(meta)) {
    p.pid = int_or(meta, "pid", 0);
    // TraceLens reads a missing init/fini time as 0.
    p.init_ns = int_or(meta, "init_time", 0);
    p.fini_ns = int_or(meta, "fini_time", 0);
    element node;
    if (!meta["node"].get(node)) p.hostname = string_or(node, "hostname");
  } else {
    p.init_ns = 0;
    p.fini_ns = 0;
  }
  read_agents(tool, p);
  read_dispatches(label, records, read_symbols(tool), p);
  read_copies(records, p);
  read_counters(label, tool, p);
  return p;
}

Profile load_profile_json(const std::string& path) {
  uint64_t file_bytes = 0;
  std::string text = io::read_text(path, &file_bytes);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw TraceError(path + ": file is empty");
  Profile p = load_profile_json_text(text, path);
  p.file_bytes = file_bytes;
  return p;
}

}  // namespace jarvis::rocprof
