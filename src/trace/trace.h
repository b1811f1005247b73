// The in-memory event store for one Kineto trace.
//
// One compact Event per element of `traceEvents`, addressed by its UID (the
// 0-based position in the array, as TraceLens numbers events). Names are
// interned; hot args are typed fields; the few args reports print (shapes,
// dtypes, strides, concrete inputs, launch geometry) live in a side table so
// kernels and python frames stay small. No JSON DOM survives loading.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/error.h"
#include "pycompat/value.h"

namespace jarvis {

using Uid = uint32_t;
inline constexpr Uid kNoUid = std::numeric_limits<Uid>::max();
inline constexpr int64_t kNoInt = std::numeric_limits<int64_t>::min();

// Kineto `cat` values that matter; everything else is Other (original text is
// still available through Event::cat_name).
enum class Cat : uint8_t {
  None,  // no `cat` member
  CpuOp,
  PythonFunction,
  UserAnnotation,
  GpuUserAnnotation,
  CudaRuntime,
  CudaDriver,
  Kernel,
  GpuMemcpy,
  GpuMemset,
  Ac2g,
  FwdBwd,
  CpuInstantEvent,
  Trace,
  Other,
};

enum class Phase : uint8_t { Complete, Instant, FlowStart, FlowEnd, Metadata, Other, None };

inline bool is_gpu_cat(Cat c) {
  return c == Cat::Kernel || c == Cat::GpuMemcpy || c == Cat::GpuMemset;
}
inline bool is_runtime_cat(Cat c) {
  return c == Cat::CudaRuntime || c == Cat::CudaDriver;
}

// pid / tid are JSON scalars that may be ints or strings ("Spans"). Strings are
// interned; comparison is by (kind, value) as TraceLens compares Python values.
struct ProcId {
  int64_t value = kNoInt;  // int value, or interned string id when is_string
  bool is_string = false;
  bool present() const { return is_string || value != kNoInt; }
  friend bool operator==(const ProcId&, const ProcId&) = default;
  friend auto operator<=>(const ProcId&, const ProcId&) = default;
};

struct ProcIdHash {
  size_t operator()(const ProcId& p) const noexcept {
    return std::hash<int64_t>()(p.value) * 31u + (p.is_string ? 1u : 0u);
  }
};

// Name predicates the analyses ask per GPU event. Each is a pure function of
// the text; StringPool evaluates them once per interned string (NameFlag bits)
// so the per-event hot paths test a bit instead of searching the text.
//
// Communication kernel: name contains nccl / rccl / cross_device_reduce
// (case-insensitive).
bool is_communication_name(std::string_view name);
// ROCm <= 7.1 rocclr copy / fill kernels reported with cat "kernel".
bool is_rocm_legacy_memcpy_name(std::string_view name);
bool is_rocm_legacy_memset_name(std::string_view name);

enum NameFlag : uint8_t {
  kNameCommunication = 1u << 0,     // is_communication_name
  kNameRocmLegacyMemcpy = 1u << 1,  // is_rocm_legacy_memcpy_name
  kNameRocmLegacyMemset = 1u << 2,  // is_rocm_legacy_memset_name
};
// The NameFlag bits of a text (what StringPool stores per id).
uint8_t name_flags_of(std::string_view name);

// Append-only string interner. Ids are dense and stable; views stay valid
// for the interner's lifetime.
class StringPool {
 public:
  uint32_t intern(std::string_view s);
  std::string_view view(uint32_t id) const { return *strings_[id]; }
  size_t size() const { return strings_.size(); }
  // Returns the id of s if already interned.
  bool find(std::string_view s, uint32_t& id) const;
  // NameFlag bits of string `id`, computed when it was interned.
  uint8_t flags(uint32_t id) const { return flags_[id]; }

 private:
  std::vector<std::unique_ptr<std::string>> strings_;
  std::vector<uint8_t> flags_;  // per id
  std::unordered_map<std::string_view, uint32_t> index_;
};

struct Event {
  double ts = std::numeric_limits<double>::quiet_NaN();
  double dur = std::numeric_limits<double>::quiet_NaN();
  double t_end = std::numeric_limits<double>::quiet_NaN();  // ts + dur, computed once

  int64_t external_id = kNoInt;       // args["External id"]
  int64_t correlation = kNoInt;       // args["correlation"]
  int64_t flow_id = kNoInt;           // top-level "id" (ac2g / fwdbwd flows)
  int64_t stream = kNoInt;            // args["stream"]
  int64_t device = kNoInt;            // args["device"]
  int64_t sequence_number = kNoInt;   // args["Sequence number"]
  int64_t python_id = kNoInt;         // args["Python id"]
  int64_t python_parent_id = kNoInt;  // args["Python parent id"]

  ProcId pid;
  ProcId tid;

  uint32_t name = 0;      // interned
  uint32_t cat_name = 0;  // interned original `cat` text ("" when absent)
  int32_t args = -1;      // index into Trace::arg_lists, -1 when none kept

  Cat cat = Cat::None;
  Phase ph = Phase::None;
  bool has_args = false;      // the event had an `args` object
  bool bp_enclosing = false;  // flow "bp":"e"

  bool has_ts() const { return !std::isnan(ts); }
  bool has_dur() const { return !std::isnan(dur); }
  bool is_gpu() const { return is_gpu_cat(cat); }
  bool is_runtime() const { return is_runtime_cat(cat); }
};

// Args kept for an event, in file order: (interned key, value).
using ArgList = std::vector<std::pair<uint32_t, PyValue>>;

enum class Platform : uint8_t { Unknown, Cuda, Rocm };
const char* platform_name(Platform p);

// process_name / process_labels / thread_name lookups (TraceLens folds `M`
// events into metadata[pid][tid][name], later entries overwriting earlier).
struct ProcessMetadata {
  std::unordered_map<ProcId, std::string, ProcIdHash> process_name;    // tid 0 entries
  std::unordered_map<ProcId, std::string, ProcIdHash> process_labels;  // tid 0 entries
  std::map<std::pair<ProcId, ProcId>, std::string> thread_name;
};

class Trace {
 public:
  std::string path;           // as given by the caller
  std::vector<Event> events;  // index == UID
  // Side table for Event::args. Events whose kept args are identical share
  // one entry (the loader stores each distinct list once), so treat entries
  // as read-only.
  std::vector<ArgList> arg_lists;
  StringPool strings;
  ProcessMetadata metadata;
  Platform platform = Platform::Unknown;
  // Top-level members other than traceEvents, as compact JSON text
  // (deviceProperties, distributedInfo, version fields, ...).
  std::vector<std::pair<std::string, std::string>> top_level_json;
  uint64_t json_bytes = 0;  // uncompressed JSON size
  uint64_t file_bytes = 0;  // size on disk
  // Events whose negative "dur" the loader set to 0 (a clock or timebase
  // fault; kept, they made idle shares exceed 100%). Reported by the health block.
  uint64_t clamped_negative_durations = 0;

  std::string_view name(Uid uid) const { return strings.view(events[uid].name); }
  std::string_view cat_name(Uid uid) const { return strings.view(events[uid].cat_name); }
  std::string_view str(uint32_t id) const { return strings.view(id); }
  // NameFlag bits of an event's name (one lookup, no text search).
  uint8_t name_flags(Uid uid) const { return strings.flags(events[uid].name); }
  bool is_communication(Uid uid) const { return name_flags(uid) & kNameCommunication; }
  bool is_rocm_legacy_memcpy(Uid uid) const { return name_flags(uid) & kNameRocmLegacyMemcpy; }
  bool is_rocm_legacy_memset(Uid uid) const { return name_flags(uid) & kNameRocmLegacyMemset; }

  // The value of a kept arg, or nullptr. Keys are the Kineto spellings
  // ("Input Dims", "Input type", "Input Strides", "Concrete Inputs", "grid", ...).
  const PyValue* arg(Uid uid, std::string_view key) const;

  // Repr of a pid/tid as TraceLens would print it (123 or PyTorch Profiler).
  std::string proc_id_text(const ProcId& p) const;

  // Metadata lookups with TraceLens's "Unknown" default.
  std::string process_name(const ProcId& pid) const;
  std::string process_label(const ProcId& pid) const;
  std::string thread_name(const ProcId& pid, const ProcId& tid) const;

  // GPU name from deviceProperties[0].name, "" when absent.
  std::string gpu_name() const;
};

// Raised for every load failure; what() names the file and the problem.
class TraceError : public ErrorOf<ErrorKind::InvalidInput> {
 public:
  using ErrorOf::ErrorOf;
};

// The TraceError for a file that cannot be opened (errno `err`): NotFound
// when it does not exist, InvalidInput otherwise (a permission, a loop).
TraceError cannot_open(const std::string& path, int err);

struct LoadOptions {
  // Called now and then with (uncompressed bytes consumed, events so far);
  // return false to cancel the load (TraceError "cancelled" is raised).
  std::function<bool(uint64_t, uint64_t)> progress;
};

}  // namespace jarvis
