#include "trace/memory_events.h"

#include <algorithm>

#include <fmt/format.h>

namespace jarvis {
namespace {

constexpr std::string_view kMemoryEventName = "[memory]";

// The integer value of a kept arg; `fallback` when absent or not a number
// (Kineto writes integers; a float is truncated toward zero).
int64_t int_arg(const Trace& trace, Uid uid, std::string_view key, int64_t fallback) {
  const PyValue* v = trace.arg(uid, key);
  if (!v || !v->is_number()) return fallback;
  return v->kind == PyValue::Kind::Int ? v->i : static_cast<int64_t>(v->f);
}

}  // namespace

bool is_memory_sample_arg(std::string_view key) {
  return key == "Addr" || key == "Bytes" || key == "Total Allocated" || key == "Total Reserved" ||
         key == "Device Type" || key == "Device Id";
}

std::vector<MemorySample> memory_samples(const Trace& trace) {
  std::vector<MemorySample> out;
  uint32_t name_id = 0;
  if (!trace.strings.find(kMemoryEventName, name_id)) return out;
  for (Uid uid = 0; uid < trace.events.size(); ++uid) {
    const Event& e = trace.events[uid];
    if (e.name != name_id || e.cat != Cat::CpuInstantEvent || !e.has_ts() || e.args < 0) continue;
    MemorySample s;
    s.bytes = int_arg(trace, uid, "Bytes", kNoInt);
    s.total_allocated = int_arg(trace, uid, "Total Allocated", kNoInt);
    if (s.bytes == kNoInt || s.total_allocated == kNoInt) continue;
    s.uid = uid;
    s.ts_ns = e.ts_ns;
    s.thread = e.thread;
    s.addr = static_cast<uint64_t>(int_arg(trace, uid, "Addr", 0));
    s.total_reserved = int_arg(trace, uid, "Total Reserved", 0);
    s.device_type = static_cast<int32_t>(int_arg(trace, uid, "Device Type", -1));
    s.device_id = static_cast<int32_t>(int_arg(trace, uid, "Device Id", -1));
    out.push_back(s);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const MemorySample& a, const MemorySample& b) { return a.ts_ns < b.ts_ns; });
  return out;
}

std::string memory_device_name(int32_t device_type, int32_t device_id) {
  switch (device_type) {
    case kDeviceTypeCpu:
      return "cpu";
    case kDeviceTypeCuda:
      return fmt::format("cuda:{}", device_id);
    case kDeviceTypeHip:
      return fmt::format("hip:{}", device_id);
    default:
      return fmt::format("device{}:{}", device_type, device_id);
  }
}

}  // namespace jarvis
