// Device memory of a trace recorded with profile_memory=True: the allocator's
// timeline per device, the allocations live at the peak and the ops that made
// them, allocations never freed and growth from step to step, and the
// difference between two runs (docs/memory.md).
//
// Model. Each [memory] sample (trace/memory_events.h) is one call of the
// caching allocator: Bytes > 0 an allocation at Addr, Bytes < 0 the free of
// the block at Addr; Total Allocated / Total Reserved are the device's totals
// after the call. Samples are replayed per device in time order, pairing
// frees with allocations by address:
//   * the timeline is Total Allocated / Total Reserved sample by sample; the
//     peak is the largest Total Allocated (the first when it repeats);
//   * the live set at the peak is every allocation of the trace not freed by
//     then; what the device held at the peak beyond it (weights and buffers
//     allocated before the trace began) is `untracked_bytes`;
//   * an allocation still live after the last sample was never freed within
//     the trace; a free whose address no allocation of the trace made frees
//     memory allocated before it (counted, not attributed).
// Attribution: the op of an allocation is the innermost cpu_op enclosing the
// sample on its thread (by time); its module is the innermost nn.Module
// python frame there, its frame the innermost other python frame (traces
// recorded with with_stack / with_modules); its step the ProfilerStep#N
// annotation whose span holds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "explore/trace_store.h"
#include "trace/memory_events.h"
#include "trace/trace.h"

namespace jarvis::memory {

struct TimelinePoint {
  int64_t ts_ns = 0;
  int64_t allocated = 0;  // bytes, after the sample
  int64_t reserved = 0;
};

// One allocation of the trace and where it was made.
struct Allocation {
  Uid uid = kNoUid;  // its [memory] sample
  int64_t ts_ns = 0;
  uint64_t addr = 0;
  int64_t bytes = 0;
  Uid op_uid = kNoUid;       // innermost enclosing cpu_op, kNoUid when none
  std::string op;            // its name, "(no op)" when none
  std::string module_path;   // nn.Module frames outermost first, "A_0/B_1"; "" when none
  std::string module;        // innermost module class (instance suffix removed), "" when none
  std::string python_frame;  // innermost non-module python frame, "" when none
  std::string step;          // ProfilerStep#N holding it, "" when none
};

// The allocations of one (op, module) pair.
struct OpGroup {
  std::string op;
  std::string module;
  size_t allocations = 0;  // made within the trace
  int64_t allocated_bytes = 0;
  size_t at_peak = 0;  // live at the peak
  int64_t at_peak_bytes = 0;
  size_t never_freed = 0;
  int64_t never_freed_bytes = 0;
  Uid largest_at_peak_op = kNoUid;  // op of its largest allocation live at the peak
};

// The device over one ProfilerStep#N annotation.
struct StepMemory {
  std::string name;
  int64_t start_ns = 0, end_ns = 0;
  int64_t allocated_at_start = 0;  // before the step's first sample
  int64_t allocated_at_end = 0;    // after its last sample
  int64_t peak_allocated = 0;      // largest Total Allocated within the step
  int64_t peak_reserved = 0;       // Total Reserved at that sample
  int64_t peak_ts_ns = 0;
  size_t samples = 0;
  int64_t growth() const { return allocated_at_end - allocated_at_start; }
};

struct DeviceMemory {
  std::string device;  // memory_device_name
  int32_t device_type = -1;
  int32_t device_id = -1;
  size_t samples = 0, allocations = 0, frees = 0;
  std::vector<TimelinePoint> timeline;  // every sample, time order

  // The peak.
  int64_t peak_allocated = 0;
  int64_t reserved_at_peak = 0;
  int64_t peak_ts_ns = 0;
  Uid peak_uid = kNoUid;
  std::string peak_step;
  int64_t max_reserved = 0;
  // The largest reserved-minus-allocated over the timeline: memory the
  // caching allocator holds but no tensor uses (fragmentation, freed blocks).
  int64_t max_gap = 0;
  int64_t max_gap_ts_ns = 0;
  std::vector<Allocation> live_at_peak;  // largest first
  int64_t tracked_at_peak = 0;           // their bytes
  int64_t untracked_at_peak = 0;         // peak_allocated - tracked_at_peak

  // Leaks and growth.
  std::vector<Allocation> never_freed;  // largest first
  int64_t never_freed_bytes = 0;
  int64_t never_freed_after_first_step_bytes = 0;
  size_t unknown_frees = 0;  // frees of addresses allocated before the trace
  int64_t unknown_freed_bytes = 0;
  std::vector<StepMemory> steps;
  int64_t growth_per_step = 0;    // median growth of the steps after the first
  bool grows_every_step = false;  // >= 3 steps, each after the first grows

  std::vector<OpGroup> by_op;  // at-peak bytes, then never-freed, then allocated, largest first

  bool is_gpu() const { return device_type != kDeviceTypeCpu; }
};

// A conclusion drawn from the numbers, with the change that addresses it.
struct MemoryFinding {
  std::string rule;  // activations_dominate_peak, reserved_gap, growth_across_steps
  std::string device;
  std::string title;
  std::string evidence;
  std::string action;
};

struct MemoryAnalysis {
  std::vector<DeviceMemory> devices;  // GPU devices first, by peak, largest first
  std::vector<MemoryFinding> findings;
  // The device the summaries lead with: the GPU device with the largest peak.
  const DeviceMemory& primary() const { return devices.front(); }
  // The device named `name` ("cuda:0", "cpu"), nullptr when absent.
  const DeviceMemory* find(const std::string& name) const;
};

// The analysis of every device with samples. Throws TraceError (Unsupported)
// naming torch.profiler.profile(profile_memory=True) when the trace has none.
MemoryAnalysis analyse_memory(const Trace& trace);

// analyse_memory, or nothing when the trace has no [memory] samples: for
// pages that show memory only where it was recorded.
std::optional<MemoryAnalysis> analyse_memory_if_recorded(const Trace& trace);

// analyse_memory, built once per loaded trace and cached on it.
std::shared_ptr<const MemoryAnalysis> trace_memory(const LoadedTrace& entry);

// At most `max_points` points of a timeline: per equal run of samples the one
// with the most allocated (so the peak always survives), plus the first and
// the last sample.
std::vector<TimelinePoint> downsample(const std::vector<TimelinePoint>& timeline,
                                      size_t max_points);

// "1.50 GiB", "12.0 MiB", "512 B" (binary units, as the allocator counts):
// the one spelling of sizes in the text, the CLI and the charts' labels.
std::string format_bytes(int64_t bytes);

struct SummaryOptions {
  std::string device;  // "" = the primary device
  size_t timeline_points = 40;
  size_t max_rows = 20;  // per list
};

// {summary, device, devices[], peak{}, timeline[], steps[], at_peak[],
//  top_allocations[], leaks{}, never_freed[], findings[]}. Throws
// std::invalid_argument for a device the trace has no samples of.
nlohmann::json memory_summary_json(const MemoryAnalysis& analysis, const SummaryOptions& options);
// A few lines: the peak, its top holders, leaks and findings.
std::string memory_summary_text(const MemoryAnalysis& analysis, const std::string& device = "");

// --- two runs --------------------------------------------------------------

struct RunPeak {
  int64_t peak_allocated = 0;
  int64_t reserved_at_peak = 0;
  int64_t max_reserved = 0;
  int64_t median_step_peak = 0;  // 0 without steps
  int64_t never_freed_bytes = 0;
  size_t steps = 0;
};

struct DeviceDiff {
  std::string reference_device, target_device;
  RunPeak reference, target;
  int64_t peak_delta() const { return target.peak_allocated - reference.peak_allocated; }
};

struct GroupDiff {
  std::string device;  // the target's device name
  std::string op, module;
  int64_t reference_at_peak_bytes = 0, target_at_peak_bytes = 0;
  int64_t reference_never_freed_bytes = 0, target_never_freed_bytes = 0;
  int64_t delta() const { return target_at_peak_bytes - reference_at_peak_bytes; }
};

struct StepDiff {
  std::string device;
  size_t index = 0;  // n-th step of each run
  std::string reference_step, target_step;
  int64_t reference_peak = 0, target_peak = 0;
};

struct MemoryDiff {
  std::vector<DeviceDiff> devices;  // devices of both runs (same name, else GPU with GPU)
  std::vector<GroupDiff> groups;    // largest |at-peak change| first
  std::vector<StepDiff> steps;
};

MemoryDiff diff_memory(const MemoryAnalysis& reference, const MemoryAnalysis& target);
// {summary, devices[], groups[], steps[]}
nlohmann::json memory_diff_json(const MemoryDiff& diff, size_t max_rows);
std::string memory_diff_text(const MemoryDiff& diff);

// --- files -----------------------------------------------------------------

// DIR/memory_timeline.csv (each device downsampled to `timeline_points`),
// DIR/memory_at_peak.csv, DIR/memory_by_op.csv, DIR/memory_summary.json;
// returns the paths written. Creates DIR.
std::vector<std::string> write_memory_files(const MemoryAnalysis& analysis, const std::string& dir,
                                            size_t timeline_points = 2000);

}  // namespace jarvis::memory
