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
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/bits.h"
#include "base/error.h"
#include "base/hash_mix.h"
#include "base/text_hash.h"
#include "pycompat/value.h"
#include "trace/mappable_vector.h"

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
  size_t operator()(const ProcId& p) const noexcept { return hash_of(p.value, p.is_string); }
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
// for the interner's lifetime (texts live in blocks the pool owns, so moving
// the pool keeps them).
class StringPool {
 public:
  // name_flags false: the NameFlag bits are not computed (flags() answers 0):
  // a parse part's pool, whose strings the joined whole interns again and
  // classifies there.
  explicit StringPool(bool name_flags = true) : name_flags_(name_flags) {}
  uint32_t intern(std::string_view s);
  std::string_view view(uint32_t id) const { return views_[id]; }
  size_t size() const { return views_.size(); }
  // Returns the id of s if already interned.
  bool find(std::string_view s, uint32_t& id) const;
  // NameFlag bits of string `id`, computed when it was interned.
  uint8_t flags(uint32_t id) const { return flags_[id]; }

 private:
  // A copy of s in the pool's blocks (one allocation per block, not per string).
  std::string_view store(std::string_view s);

  std::vector<std::string_view> views_;  // per id
  std::vector<uint8_t> flags_;           // per id
  std::unordered_map<std::string_view, uint32_t, TextHash> index_;
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* block_free_ = nullptr;
  size_t block_left_ = 0;
  size_t next_block_bytes_ = 4096;
  bool name_flags_ = true;
};

// Event times are int64 nanoseconds; kNoTime marks an absent ts / dur.
inline constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();

// Microseconds (the unit of Kineto's JSON and of every report) from stored
// nanoseconds, correctly rounded: for a JSON value with at most three decimals
// of µs this is bit-identical to the double a correctly rounding parser
// (simdjson, Python's float) reads from the text, so every computation on it
// is unchanged. Beyond 2^53 ns (epoch-µs clocks) the quotient is formed from
// its exact integer and fractional parts, still correctly rounded. NaN when
// absent.
double ns_to_us_wide(int64_t ns);  // |ns| > 2^53: see ns_to_us
inline double ns_to_us(int64_t ns) {
  constexpr int64_t kExact = int64_t{1} << 53;
  if (ns == kNoTime) return std::numeric_limits<double>::quiet_NaN();
  if (ns >= -kExact && ns <= kExact) return static_cast<double>(ns) / 1000.0;
  return ns_to_us_wide(ns);
}

// Nanoseconds nearest to `us` microseconds (half away from zero); false when
// `us` is not finite or out of the int64 range.
bool us_to_ns(double us, int64_t& ns);

// The exact nanoseconds of a JSON number of microseconds (its text, e.g.
// "2241346144971.224" or "1.5e3"): false when the value has digits below
// 1 ns, does not fit in int64, or the text is not a plain JSON number. Exact
// where a double is not (epoch-µs clocks resolve only 0.25 µs as a double).
bool decimal_us_to_ns(std::string_view text, int64_t& ns);

// The ids most events lack, kept in a side table of the Trace (read them with
// Trace::flow_id, stream, ...). Bit i of Event::id_mask says whether id i is
// present.
enum class SparseId : uint8_t {
  FlowId,          // top-level "id" (ac2g / fwdbwd flows)
  Stream,          // args["stream"]
  Device,          // args["device"]
  SequenceNumber,  // args["Sequence number"]
  PythonId,        // args["Python id"]
  PythonParentId,  // args["Python parent id"]
  ExternalId,      // args["External id"]
  Correlation,     // args["correlation"]
};
inline constexpr int kSparseIds = 8;  // all bits of Event::id_mask

// One element of traceEvents, 40 bytes. Times are int64 ns (read them in µs
// with ts() / dur() / end()); the (pid, tid) pair is an index into
// Trace::threads; the rarely present ids live in Trace's side table.
struct Event {
  int64_t ts_ns = kNoTime;
  int64_t dur_ns = kNoTime;

  uint32_t name = 0;      // interned
  uint32_t cat_name = 0;  // interned original `cat` text ("" when absent)
  int32_t args = -1;      // index into Trace::arg_lists, -1 when none kept
  uint32_t thread = 0;    // index into Trace::threads (0: no pid, no tid)
  uint32_t ids = 0;       // offset of the present sparse ids in Trace's side table

  Cat cat = Cat::None;
  Phase ph = Phase::None;
  uint8_t id_mask = 0;            // bit SparseId: present in the side table
  bool has_args : 1 = false;      // the event had an `args` object
  bool bp_enclosing : 1 = false;  // flow "bp":"e"
  // Zero, so that every byte of an Event is determinate (snapshots of equal
  // traces are equal bytes).
  uint8_t unused_bits_ : 6 = 0;

  bool has_ts() const { return ts_ns != kNoTime; }
  bool has_dur() const { return dur_ns != kNoTime; }
  // Microseconds, NaN when absent.
  double ts() const { return ns_to_us(ts_ns); }
  double dur() const { return ns_to_us(dur_ns); }
  // ts() + dur() in double, exactly as Python's ts + dur (not from the ns sum).
  double end() const { return ts() + dur(); }
  bool is_gpu() const { return is_gpu_cat(cat); }
  bool is_runtime() const { return is_runtime_cat(cat); }
};
static_assert(sizeof(Event) <= 40, "Event must stay compact (issue 16)");

// Every field of one event, unpacked: what the loaders (and tests) fill in;
// Trace::add_event packs it into an Event and the side tables.
struct EventFields {
  int64_t ts_ns = kNoTime;
  int64_t dur_ns = kNoTime;
  int64_t external_id = kNoInt;
  int64_t correlation = kNoInt;
  int64_t flow_id = kNoInt;
  int64_t stream = kNoInt;
  int64_t device = kNoInt;
  int64_t sequence_number = kNoInt;
  int64_t python_id = kNoInt;
  int64_t python_parent_id = kNoInt;
  ProcId pid;
  ProcId tid;
  uint32_t name = 0;
  uint32_t cat_name = 0;
  int32_t args = -1;
  Cat cat = Cat::None;
  Phase ph = Phase::None;
  bool has_args = false;
  bool bp_enclosing = false;

  bool has_ts() const { return ts_ns != kNoTime; }
  bool has_dur() const { return dur_ns != kNoTime; }
  // Sets ts / dur from microseconds (rounded to the nearest ns).
  EventFields& ts_us(double us);
  EventFields& dur_us(double us);
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

// One (pid, tid) pair of Trace::threads.
struct ThreadKey {
  ProcId pid;
  ProcId tid;
  friend bool operator==(const ThreadKey&, const ThreadKey&) = default;
};

struct ThreadKeyHash {
  size_t operator()(const ThreadKey& k) const noexcept {
    return hash_of(k.pid.value, k.pid.is_string, k.tid.value, k.tid.is_string);
  }
};

class Trace {
 public:
  std::string path;  // as given by the caller
  // index == UID; a view of the snapshot file when loaded from one
  MappableVector<Event> events;
  // Distinct (pid, tid) pairs, indexed by Event::thread; entry 0 is the
  // absent pair (no pid, no tid).
  std::vector<ThreadKey> threads{ThreadKey{}};
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

  // Appends an event (packing its pid/tid and sparse ids); returns its UID.
  Uid add_event(const EventFields& f);
  // The index of (pid, tid) in `threads`, added when new.
  uint32_t thread_index(const ProcId& pid, const ProcId& tid);

  const ProcId& pid(const Event& e) const { return threads[e.thread].pid; }
  const ProcId& tid(const Event& e) const { return threads[e.thread].tid; }
  const ProcId& pid(Uid uid) const { return pid(events[uid]); }
  const ProcId& tid(Uid uid) const { return tid(events[uid]); }

  // A sparse id of an event, kNoInt when absent.
  int64_t sparse_id(const Event& e, SparseId which) const {
    auto bit = static_cast<unsigned>(which);
    if (!(e.id_mask & (1u << bit))) return kNoInt;
    unsigned below = e.id_mask & ((1u << bit) - 1u);
    return sparse_ids_[e.ids + bit_count8(static_cast<uint8_t>(below))];
  }
  int64_t flow_id(const Event& e) const { return sparse_id(e, SparseId::FlowId); }
  int64_t stream(const Event& e) const { return sparse_id(e, SparseId::Stream); }
  int64_t device(const Event& e) const { return sparse_id(e, SparseId::Device); }
  int64_t sequence_number(const Event& e) const { return sparse_id(e, SparseId::SequenceNumber); }
  int64_t python_id(const Event& e) const { return sparse_id(e, SparseId::PythonId); }
  int64_t python_parent_id(const Event& e) const { return sparse_id(e, SparseId::PythonParentId); }
  int64_t external_id(const Event& e) const { return sparse_id(e, SparseId::ExternalId); }
  int64_t correlation(const Event& e) const { return sparse_id(e, SparseId::Correlation); }
  int64_t flow_id(Uid uid) const { return flow_id(events[uid]); }
  int64_t stream(Uid uid) const { return stream(events[uid]); }
  int64_t device(Uid uid) const { return device(events[uid]); }
  int64_t sequence_number(Uid uid) const { return sequence_number(events[uid]); }
  int64_t python_id(Uid uid) const { return python_id(events[uid]); }
  int64_t python_parent_id(Uid uid) const { return python_parent_id(events[uid]); }
  int64_t external_id(Uid uid) const { return external_id(events[uid]); }
  int64_t correlation(Uid uid) const { return correlation(events[uid]); }
  // Sets (or replaces) one sparse id of an event already added.
  void set_sparse_id(Uid uid, SparseId which, int64_t value);
  // The side table itself (for sizing and snapshots).
  const MappableVector<int64_t>& sparse_ids() const { return sparse_ids_; }
  // Frees the spare capacity of the small side tables once loading is done.
  void shrink_side_tables();
  // Installs a sparse id table read back from a snapshot (with `events`,
  // `strings`, `arg_lists` and `threads` already in place) and rebuilds the
  // (pid, tid) index. Throws std::invalid_argument when an event's name, args,
  // thread, ids or enums lie outside their tables. `before_block(block, n)`
  // runs before each block of events is checked: the snapshot reader
  // checksums the block there, so the one pass over the events serves both
  // while the block is in cache.
  void restore_side_tables(MappableVector<int64_t> sparse_ids,
                           const std::function<void(const Event*, size_t)>& before_block);

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

 private:
  friend class TraceJoiner;
  // Present sparse ids of every event, packed in SparseId order at Event::ids.
  MappableVector<int64_t> sparse_ids_;
  std::unordered_map<ThreadKey, uint32_t, ThreadKeyHash> thread_index_;
  uint32_t last_thread_ = 0;
};

// Arg list ids by the lists' identity text (the loader's key of the kept
// args), looked up by string_view without building a string.
using ArgListIndex = std::unordered_map<std::string, int32_t, TextHash, std::equal_to<>>;

// Joins traces parsed from consecutive slices of one traceEvents array (the
// parallel loader parses slices on several threads) into the whole trace, in
// slice order. The result equals one sequential parse: strings, (pid, tid)
// pairs and arg lists get their ids in order of first appearance, and equal
// arg lists (same `arg_keys` text) share one entry, as the loader shares them.
class TraceJoiner {
 public:
  explicit TraceJoiner(Trace& whole) : whole_(whole) {}
  // Appends `part`'s events, metadata and tables; arg_keys[i] is the identity
  // text of part.arg_lists[i].
  // A part's event may name an arg list the whole already holds by its
  // whole id w, as args = joined_arg(w) (see find_arg_list).
  void append(Trace&& part, const std::vector<std::string>& arg_keys);

  // The whole's id of the arg list whose identity text is `key`, -1 when no
  // part appended so far has it. Safe while another thread appends: a parse
  // worker asks before it builds an arg list a part joined earlier has.
  int32_t find_arg_list(std::string_view key) const;
  // How a part's event refers to whole arg list `whole_id`: below -1, where
  // the part's own ids (>= 0) and "none" (-1) are not.
  static constexpr int32_t joined_arg(int32_t whole_id) { return -2 - whole_id; }

 private:
  ProcId proc_id(const ProcId& p) const;

  Trace& whole_;
  std::vector<uint32_t> string_map_;        // part's string id -> whole's (per append)
  mutable std::shared_mutex arg_index_mu_;  // writes: append; reads: find_arg_list
  ArgListIndex arg_index_;
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
  // Threads that parse the events while the reading thread finds their
  // extents: -1 picks (from 4 MiB of JSON, one per core that other loads of
  // this process leave free, at most 8, none unless two are free; the
  // environment variable JARVIS_PARSE_WORKERS=N overrides); 0 parses on the
  // reading thread. Every choice gives the identical Trace.
  int parse_workers = -1;
  // JSON text per batch handed to a parse worker; 0 for the default (256
  // KiB, then 1 MiB from 128 MiB of JSON on).
  size_t parse_batch_bytes = 0;
};

}  // namespace jarvis
