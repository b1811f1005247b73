// The allocator samples of a trace recorded with profile_memory=True.
//
// Kineto writes one `[memory]` instant event (cat cpu_instant_event) per
// allocation and per free of the caching allocator, on the thread of the op
// that asked for it, with args Addr, Bytes (negative for a free), Total
// Allocated / Total Reserved (the allocator's totals after the call) and
// Device Type / Device Id (c10::DeviceType: 0 CPU, 1 CUDA, 6 HIP). The loader
// keeps exactly these args on cpu_instant_event events (is_memory_sample_arg);
// memory_samples() reads them back as a typed table, so traces without memory
// events pay nothing and snapshots need no table of their own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.h"

namespace jarvis {

// c10::DeviceType values of the samples (Device Type arg).
inline constexpr int32_t kDeviceTypeCpu = 0;
inline constexpr int32_t kDeviceTypeCuda = 1;
inline constexpr int32_t kDeviceTypeHip = 6;

struct MemorySample {
  Uid uid = kNoUid;  // the [memory] event
  int64_t ts_ns = kNoTime;
  uint32_t thread = 0;  // Trace::threads index of the allocating thread
  int32_t device_type = -1;
  int32_t device_id = -1;
  uint64_t addr = 0;
  int64_t bytes = 0;            // > 0 allocation, < 0 free
  int64_t total_allocated = 0;  // after this call
  int64_t total_reserved = 0;   // after this call
};

// The args of a cpu_instant_event the loader keeps: the allocator fields.
bool is_memory_sample_arg(std::string_view key);

// Every [memory] event with a timestamp and numeric Bytes and Total Allocated,
// ordered by time (file order among equal times): the order the allocator
// saw them, as far as the trace tells.
std::vector<MemorySample> memory_samples(const Trace& trace);

// "cpu", "cuda:0", "hip:1", other device types as "device<type>:<id>".
std::string memory_device_name(int32_t device_type, int32_t device_id);

}  // namespace jarvis
