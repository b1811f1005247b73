// The process-wide cache of parsed traces, shared by every session.
//
// Traces are keyed by file identity (device, inode, size, mtime), so two
// spellings of one path, a hard link or a symlink share one parsed copy, and
// a file rewritten in place is parsed again. Sessions hold *references* (see
// TraceCache::Ref) rather than the parsed data: a referenced entry that no
// call is using may still be evicted under the memory budget and is parsed
// again on next use, so the budget holds however many sessions load traces.
// Loads of one file that overlap share one parse.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <typeindex>
#include <vector>

#include "base/forked_worker.h"
#include "trace/snapshot.h"
#include "trace/trace.h"

namespace jarvis {

// What makes two paths "the same trace".
struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  std::string path;  // canonical path (not part of the key)

  auto key() const { return std::tie(device, inode, size, mtime_ns); }
  bool operator<(const FileIdentity& o) const { return key() < o.key(); }
  bool same_file(const FileIdentity& o) const { return key() == o.key(); }
};

// stat() of the canonical path; throws TraceError naming `path`.
FileIdentity identify_file(const std::string& path);

// One parsed trace and what was derived from it (call tree, reports, ...).
class TraceEntry {
 public:
  // `snapshot_writer`: the snapshot write of the load, when it runs beside
  // the session (joined when the entry goes).
  TraceEntry(FileIdentity id, std::shared_ptr<const Trace> trace, double load_seconds,
             uint64_t bytes, std::unique_ptr<SnapshotWriteBehind> snapshot_writer = nullptr)
      : id_(std::move(id)),
        trace_(std::move(trace)),
        load_seconds_(load_seconds),
        bytes_(bytes),
        snapshot_writer_(std::move(snapshot_writer)) {}
  TraceEntry(const TraceEntry&) = delete;
  TraceEntry& operator=(const TraceEntry&) = delete;
  // Joins the tasks run_behind started (the trace is still alive then).
  ~TraceEntry();

  // Runs `task`, a write of something derived from the trace to a cache
  // file, on a thread of its own at a low priority (nice 10), so that the
  // session's next calls go first; joined when the entry goes. In a forked
  // worker, which exits after its call, it runs here instead.
  void run_behind(std::function<void()> task) const;

  const FileIdentity& identity() const { return id_; }
  const Trace& trace() const { return *trace_; }
  double load_seconds() const { return load_seconds_; }
  uint64_t bytes() const { return bytes_; }  // estimated resident size, derived data included

  // A derived artefact of type T, built by `build` on first request and
  // cached (one per type and key). Concurrent first requests build it once;
  // if `build` throws, nothing is cached and the exception propagates.
  template <class T>
  std::shared_ptr<const T> cached(const std::string& key, const std::function<T()>& build) const {
    std::shared_ptr<Slot> slot = slot_for(std::type_index(typeid(T)), key);
    std::unique_lock<std::mutex> lock(slot->mutex, std::defer_lock);
    // A forked worker never waits on a slot: a lock held at the fork belongs
    // to a thread the child does not have. It builds its own copy instead.
    if (in_forked_worker() && !lock.try_lock()) return std::make_shared<const T>(build());
    if (!lock.owns_lock()) lock.lock();
    if (!slot->value) slot->value = std::make_shared<const T>(build());
    return std::static_pointer_cast<const T>(slot->value);
  }

  // The artefact cached under (T, key), or null when none was built yet (or
  // one is being built now: find never waits).
  template <class T>
  std::shared_ptr<const T> find(const std::string& key) const {
    std::shared_ptr<Slot> slot = slot_for(std::type_index(typeid(T)), key);
    std::unique_lock<std::mutex> lock(slot->mutex, std::try_to_lock);
    if (!lock.owns_lock()) return nullptr;
    return std::static_pointer_cast<const T>(slot->value);
  }
  // Caches `value` under (T, key) unless something is cached there already:
  // what another process derived (a forked worker's analysis, sent back to
  // the server: mcp/tool.h ToolContext::keep).
  template <class T>
  void put(const std::string& key, std::shared_ptr<const T> value) const {
    std::shared_ptr<Slot> slot = slot_for(std::type_index(typeid(T)), key);
    std::unique_lock<std::mutex> lock(slot->mutex, std::defer_lock);
    if (in_forked_worker() && !lock.try_lock()) return;
    if (!lock.owns_lock()) lock.lock();
    if (!slot->value) slot->value = std::move(value);
  }

 private:
  struct Slot {
    std::mutex mutex;
    std::shared_ptr<const void> value;
  };
  std::shared_ptr<Slot> slot_for(std::type_index type, const std::string& key) const;

  FileIdentity id_;
  std::shared_ptr<const Trace> trace_;
  double load_seconds_;
  uint64_t bytes_;
  mutable std::mutex slots_mutex_;
  mutable std::map<std::pair<std::type_index, std::string>, std::shared_ptr<Slot>> slots_;
  std::unique_ptr<SnapshotWriteBehind> snapshot_writer_;
  mutable std::mutex behind_mutex_;
  mutable std::vector<std::thread> behind_;
};

// Rough resident size of a parsed trace plus room for its derived data.
uint64_t estimate_trace_bytes(const Trace& trace);

// The same, estimated before parsing from the file alone: the JSON's size
// (a gzip file's own trailer, ISIZE, for its last member; at least 4x the
// compressed size when that field wrapped) times the ratio measured on the
// shared traces, plus 1 MiB (docs/security.md). 0 when the file cannot be
// read.
uint64_t estimate_trace_bytes_before_parse(const std::string& path);

// The Kineto loader's entry for a file (TraceCache's default parser).
std::shared_ptr<const TraceEntry> parse_kineto(const FileIdentity& id, const LoadOptions& options);

class TraceCache {
 public:
  // max_bytes = 0: no budget. Parses run at most `parallel_loads` at a time,
  // which bounds the memory of loads in flight too.
  explicit TraceCache(uint64_t max_bytes = 0, size_t parallel_loads = 2);
  TraceCache(const TraceCache&) = delete;
  TraceCache& operator=(const TraceCache&) = delete;

  // The cache used where no server provides one (CLI runs).
  static TraceCache& process_default();

  // A handle-side reference: while any Ref to an identity lives, the entry
  // counts as referenced (evicted only after unreferenced ones).
  class Ref {
   public:
    Ref() = default;
    Ref(TraceCache* cache, FileIdentity id);
    Ref(const Ref&) = delete;
    Ref& operator=(const Ref&) = delete;
    Ref(Ref&& o) noexcept;
    Ref& operator=(Ref&& o) noexcept;
    ~Ref();
    const FileIdentity& identity() const { return id_; }

   private:
    TraceCache* cache_ = nullptr;
    FileIdentity id_;
  };

  struct Acquired {
    std::shared_ptr<const TraceEntry> entry;
    bool parsed = false;  // this call parsed the file (false: cached or another call's parse)
  };
  // Builds the entry of a file (default: the Kineto loader); the caller's
  // layer may read other formats and attach what it derived to the entry.
  using Parser =
      std::function<std::shared_ptr<const TraceEntry>(const FileIdentity&, const LoadOptions&)>;
  // The entry for `id`, parsing the file when it is not resident. Throws
  // TraceError (bad file, cancelled, or the budget cannot hold it).
  Acquired acquire(const FileIdentity& id, const LoadOptions& options = {},
                   const Parser& parser = {});
  Ref reference(const FileIdentity& id) { return Ref(this, id); }
  // The entry of `id` when it is resident now (never parses), else null.
  std::shared_ptr<const TraceEntry> find_resident(const FileIdentity& id) const;

  struct Stats {
    uint64_t resident_bytes = 0;
    size_t resident = 0;
    uint64_t parses = 0;
    uint64_t evictions = 0;
  };
  Stats stats() const;
  uint64_t max_bytes() const { return max_bytes_; }
  // Drops every resident entry no call is using (tests, memory pressure).
  void trim();
  // Held by the thread that forks a worker (src/mcp/worker_call.h), so the
  // child's copy of the cache is not in the middle of another thread's change.
  std::unique_lock<std::mutex> hold_for_fork() const { return std::unique_lock(mutex_); }

  // Memory a call will use outside the cache (the rank traces of a
  // multi-rank analysis, parsed per call), counted against the budget while
  // the Reservation lives: unused traces are evicted to make room, and when
  // none is left the reservation throws TraceError naming `what`, before
  // anything is parsed.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(TraceCache* cache, uint64_t bytes) : cache_(cache), bytes_(bytes) {}
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    Reservation(Reservation&& o) noexcept : cache_(o.cache_), bytes_(o.bytes_) {
      o.cache_ = nullptr;
    }
    ~Reservation();
    uint64_t bytes() const { return bytes_; }

   private:
    TraceCache* cache_ = nullptr;
    uint64_t bytes_ = 0;
  };
  Reservation reserve(uint64_t bytes, const std::string& what);

 private:
  struct Resident {
    std::shared_ptr<const TraceEntry> entry;
    uint64_t last_used = 0;
  };
  struct InFlight {
    bool done = false;
    std::shared_ptr<const TraceEntry> result;
    std::exception_ptr error;
  };

  std::shared_ptr<const TraceEntry> lookup_locked(const FileIdentity& id);
  Acquired wait_for(std::unique_lock<std::mutex>& lock, const std::shared_ptr<InFlight>& flight,
                    const FileIdentity& id, const LoadOptions& options);
  Acquired parse(std::unique_lock<std::mutex>& lock, const std::shared_ptr<InFlight>& flight,
                 const FileIdentity& id, const LoadOptions& options, const Parser& parser);
  void admit_locked(const std::shared_ptr<const TraceEntry>& entry);
  bool evict_one_locked(bool referenced_too);
  void add_ref(const FileIdentity& id);
  void drop_ref(const FileIdentity& id);

  uint64_t max_bytes_;
  size_t parallel_loads_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<FileIdentity, Resident> resident_;
  std::map<FileIdentity, std::shared_ptr<InFlight>> in_flight_;
  std::map<FileIdentity, size_t> refs_;
  uint64_t resident_bytes_ = 0;
  uint64_t clock_ = 0;
  size_t parsing_ = 0;
  uint64_t parses_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace jarvis
