// XPlane input: the XSpace protobuf that jax.profiler / XProf write
// (`*.xplane.pb`), read in the format's own terms (planes, lines, events,
// stats with their metadata resolved), and bridged into the event model.
//
// The schema is xla/tsl/profiler/protobuf/xplane.proto; wire.cpp decodes it
// by hand (field numbers as named constants there) with every length
// checked, so a truncated or foreign file is a TraceError, never a crash.
// No protobuf type appears here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.h"
#include "xplane/hlo.h"

namespace jarvis::xplane {

// One XStat with its metadata resolved: `name` is the XStatMetadata name;
// a ref_value stat reads as the referenced XStatMetadata's name (that is how
// XPlane interns repeated strings such as hlo_op), so it is text here.
struct Stat {
  enum class Kind : uint8_t { None, Double, Uint, Int, Text, Bytes };
  std::string name;
  Kind kind = Kind::None;
  double real = 0;
  uint64_t uint = 0;
  int64_t integer = 0;
  std::string text;        // Text (str_value or resolved ref_value)
  uint64_t bytes_len = 0;  // Bytes: the size
  std::string bytes;       // Bytes: the payload (load_space drops the HLO protos' once decoded)
  // Integer value of Uint / Int stats; false for other kinds.
  bool as_int(int64_t& out) const;
};

struct EventMetadata {
  int64_t id = 0;
  std::string name;
  std::string display_name;
  std::vector<Stat> stats;
};

struct Event {
  int64_t metadata_id = 0;
  int64_t offset_ps = 0;
  int64_t duration_ps = 0;
  int64_t num_occurrences = 0;  // > 0: an aggregated event (no offset)
  std::vector<Stat> stats;
};

struct Line {
  int64_t id = 0;
  int64_t display_id = 0;
  std::string name;
  std::string display_name;
  int64_t timestamp_ns = 0;
  int64_t duration_ps = 0;
  std::vector<Event> events;
};

struct Plane {
  int64_t id = 0;
  std::string name;  // "/device:GPU:0", "/host:CPU", "/host:metadata", ...
  std::vector<Line> lines;
  std::vector<EventMetadata> event_metadata;  // sorted by id
  std::vector<Stat> stats;

  const EventMetadata* metadata(int64_t id) const;
  const Stat* stat(std::string_view name) const;
  // N of "/device:GPU:N" (or "/device:ROCM:N"), -1 for other planes.
  int64_t gpu_ordinal() const;
};

struct Space {
  std::string path;
  std::vector<Plane> planes;
  std::vector<std::string> errors, warnings, hostnames;
  uint64_t file_bytes = 0;
  // What decoding it took, as charged to its ExpansionBudget
  // (trace/expansion_budget.h); to_trace charges on from there.
  uint64_t expanded_bytes = 0;
  // The XLA programs of the /host:metadata plane (hlo.h), in plane order.
  std::vector<HloModule> hlo_modules;

  // The module a GPU kernel's hlo_module / program_id stats name: the one
  // with both (label "name(program_id)"), else the only one of that name;
  // nullptr when none or several match.
  const HloModule* find_hlo_module(std::string_view name, int64_t program_id) const;
};

// True when the file's content is an XSpace protobuf (its first field is a
// plane, or a hostname / error / warning string, whose length fits the file,
// and the first plane's own fields decode), whatever its name.
bool is_xplane_input(const std::string& path);
bool is_xplane_bytes(std::string_view bytes);

// Throws TraceError naming the file: unreadable, truncated, not an XSpace,
// an HLO proto of /host:metadata damaged (hlo.h decodes them here), or a
// file that expands past its ExpansionBudget (strings referenced far more
// often than stored, iota device lists, repeated operands).
Space load_space(const std::string& path);
Space load_space_bytes(std::string_view bytes, const std::string& label);

// What the bridge kept and left out, for the trace health.
struct BridgeCounts {
  uint64_t gpu_events = 0;  // kernels + memcpy
  uint64_t host_events = 0;
  uint64_t aggregated_skipped = 0;  // num_occurrences events (no timestamp)
  uint64_t kernels_without_hlo_op = 0;
  uint64_t kernels_without_correlation = 0;
  uint64_t hlo_modules = 0;             // HLO protos in /host:metadata
  uint64_t kernels_with_hlo = 0;        // joined to their HLO instruction
  uint64_t kernels_hlo_unresolved = 0;  // hlo_op / hlo_module naming no instruction
};

// The event model for a space (header comment of to_trace.cpp has the rules):
//   * start = line timestamp_ns + event offset_ps (rounded to ns), dur from
//     duration_ps (rounded to ns);
//   * "/device:GPU:N" planes: pid N+1 (xprof's trace-viewer pid, the
//     gpu_pid TraceLens's JAX report prints), tid = line id; an event is
//     gpu_memcpy / gpu_memset / kernel by the stat XLA's GPU tracer records
//     on it (memcpy_details / Memset_details / kernel_details), and only
//     when it has none by its line's name ("Stream #8(MemcpyOther)": every
//     kind listed a Memcpy* is a copy line, every kind Memset a memset line,
//     anything else kernels); stream = line id, device = N, correlation
//     (and External id) from correlation_id;
//   * host planes ("/host:CPU"): pid 1000+k (k-th host plane), tid = line id;
//     events with a correlation_id that are hip*/cu* API calls or carry the
//     correlation of a GPU event (older XLA names the launch after its
//     kernel) are cuda_runtime, with External id = correlation, so the call
//     tree links them to their GPU work (on any line: JAX 0.11 on CUDA
//     launches from the "python3" line); the "python*" line's other events
//     (`$file:line` frames) python_function, the rest cpu_op;
//   * hlo_op, hlo_module, tf_op, name (the JAX op path), kernel_details,
//     memcpy_details, Memset_details and program_id stats are kept as args;
//   * a kernel whose hlo_module / program_id / hlo_op name an instruction of
//     the HLO protos gets its HLO as args: hlo_opcode, hlo_shape (result),
//     hlo_operands (operand shapes) and hlo_operand_names, hlo_root (true
//     for its computation's root), custom_call_target, backend_config,
//     conv_dim_labels, window, feature_group_count, dot_dims, replica_groups,
//     hlo_metadata (XLA's metadata={...} text);
//   * aggregated events are counted and skipped; "/host:metadata" (HLO
//     protos) and other planes are not events.
// Platform from the device_vendor stat (AMD: ROCm, NVIDIA: CUDA); the GPU
// name (deviceProperties) from gpu_device_name ("NVIDIA H200") when the
// plane has it, else vendor and compute capability.
// The args it copies onto events (stats, HLO operand shapes) are charged to
// the space's ExpansionBudget (what decoding took, then these): TraceError
// past it.
Trace to_trace(const Space& space, BridgeCounts* counts = nullptr);

// True for a Trace made by to_trace; counts_of reads back the bridge counts.
bool is_xplane_trace(const Trace& trace);
BridgeCounts counts_of(const Trace& trace);

}  // namespace jarvis::xplane
