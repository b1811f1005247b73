// Persisted snapshots of loaded traces (issue 16).
//
// After a trace is loaded from JSON, its whole event store (events, the
// (pid, tid) and sparse id tables, strings, arg lists, process metadata,
// top-level members, counters) is written to one binary file in a cache
// directory, so the next load of the same file in a new process reads that
// instead of parsing the JSON again. The snapshot is keyed by the file's
// identity (canonical path, device, inode, size, mtime, a checksum of its
// first and last 64 KiB), the format version and this build's sizeof(Event);
// it is written atomically and ignored (with a logged reason) when any of
// these differ, when it is truncated, or when its checksum does not match.
//
// Trust (issue 49): the cache directory and its snapshots/ are created mode
// 0700 and used only while they are the user's own (owned by the effective
// user, not writable by group or others, not a symbolic link); otherwise one
// warning per process names the directory and why, and traces load from their
// files. Snapshots are written 0600 and read only when owned by the user.
// Each snapshot carries a MAC (base/keyed_mac.h) under a random per-user key
// kept in the cache directory (`key`, 0600, made on first use), over its
// payload (the trace identity included) and header: a snapshot edited with a
// matching CRC-32, or copied from another cache, is "not trusted", ignored
// and rewritten.
//
// A snapshot is read by mapping the file (private, copy on write): the event
// array and the sparse id table are used in place (Trace::events is then a
// view, MappableVector), so a load costs the checksum and the small tables,
// not a copy of the store. Snapshots are only ever replaced by rename, never
// rewritten in place, so a mapped snapshot does not change under a loaded
// trace; truncating one by hand while a process uses it would (SIGBUS).
//
// Cache directory: $JARVIS_CACHE_DIR, else $XDG_CACHE_HOME/jarvis, else
// $HOME/.cache/jarvis. JARVIS_NO_SNAPSHOT=1 turns snapshots off. The cache is
// bounded: after each write the least recently used snapshots (a read
// refreshes a snapshot's time) are removed until the snapshots total at most
// $JARVIS_CACHE_MAX_MB MiB (default 4096), the one just written excepted.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "trace/trace.h"

namespace jarvis {

// 2: the event and sparse id arrays start at 8-byte file offsets (read in place).
// 3: 40-byte events, External id and correlation moved to the sparse ids.
// 4: a 64-byte header with a keyed MAC; the trace's device in its identity.
// 5: cpu_instant_event keeps the [memory] allocator args (trace/memory_events.h).
// 6: process_name metadata without a tid is kept (XProf's JSON; a JAX trace in
//    Chrome trace JSON is refused on load, never snapshotted).
inline constexpr uint32_t kSnapshotVersion = 6;

// The per-user secret that binds snapshots to one cache directory.
using SnapshotMacKey = std::array<uint8_t, 32>;

// The identity a snapshot is keyed by. Throws TraceError when the file
// cannot be read.
struct SnapshotKey {
  std::string canonical_path;
  uint64_t device = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t inode = 0;
  uint32_t edge_crc = 0;  // CRC-32 of the first and last 64 KiB
  friend bool operator==(const SnapshotKey&, const SnapshotKey&) = default;
};
SnapshotKey snapshot_key(const std::string& path);

// The cache directory ("" when none can be named: no env and no HOME).
std::string snapshot_cache_dir();
// False when JARVIS_NO_SNAPSHOT is set to anything but "" or "0".
bool snapshots_enabled();
// The cache bound in bytes: $JARVIS_CACHE_MAX_MB MiB, default 4096 MiB.
uint64_t snapshot_cache_budget();
// Removes least recently used snapshots of `cache_dir` until the rest total
// at most `budget_bytes`; `keep` is never removed. Returns the files removed.
std::vector<std::string> prune_snapshot_cache(const std::string& cache_dir, uint64_t budget_bytes,
                                              const std::string& keep);
// The snapshot file of a trace in `cache_dir`.
std::string snapshot_path(const std::string& cache_dir, const SnapshotKey& key);

// Readies `cache_dir` for snapshots (it and snapshots/ made 0700 when
// missing, then checked to be the user's own) and returns its MAC key (its
// file `key`, made on first use). Nullopt, with `problem` saying why, when the
// directory is not to be trusted or the key cannot be had.
std::optional<SnapshotMacKey> open_snapshot_cache(const std::string& cache_dir,
                                                  std::string& problem);

// Called with the reason a snapshot was not used or not written.
using SnapshotLog = std::function<void(std::string_view)>;

// The snapshot's trace, or nullopt (with `log` told why) when it is absent,
// stale, truncated, corrupt, or not trusted (not the user's file, or its MAC
// is not that of `mac_key`). `display_path` becomes Trace::path.
std::optional<Trace> read_snapshot(const std::string& file, const SnapshotKey& key,
                                   const SnapshotMacKey& mac_key, const std::string& display_path,
                                   const SnapshotLog& log);

// Writes the snapshot atomically, mode 0600, its MAC under `mac_key`. Throws
// std::runtime_error on I/O failure.
void write_snapshot(const std::string& file, const SnapshotKey& key, const SnapshotMacKey& mac_key,
                    const Trace& trace);

struct SnapshotOptions {
  bool enabled = true;              // load_trace(path, options) sets it from snapshots_enabled()
  std::string cache_dir;            // "" for snapshot_cache_dir()
  SnapshotLog log;                  // reasons; unset: one line on stderr
  uint64_t cache_budget_bytes = 0;  // 0 for snapshot_cache_budget()
};

// load_trace(path, options) with explicit snapshot options: reads the
// snapshot when it is current, else loads the JSON and writes one (a failed
// write is logged, never an error of the load).
Trace load_trace(const std::string& path, const LoadOptions& options,
                 const SnapshotOptions& snapshot);

// The snapshot write of a JSON load, left to a background thread: on a
// first load the caller goes on with the trace while the store is written
// (~15-20 ms at 466k events, a tenth of a cold report). By default the
// thread starts with the load; a writer made with Start::OnRequest keeps the
// write until start(), so a caller whose two cores are busy right after the
// load (the report's call tree and sheets) can start it where a core idles
// (the workbook's tail). wait(), or the destructor, runs a write never
// started and joins it; keep the writer alive until the process is done
// with the trace, so that no half-written temp file is left behind.
class SnapshotWriteBehind {
 public:
  enum class Start { WithLoad, OnRequest };
  explicit SnapshotWriteBehind(Start when = Start::WithLoad) : when_(when) {}
  SnapshotWriteBehind(const SnapshotWriteBehind&) = delete;
  SnapshotWriteBehind& operator=(const SnapshotWriteBehind&) = delete;
  ~SnapshotWriteBehind() { wait(); }
  // Starts a pending write on its thread (no-op when none is pending).
  void start();
  // Runs a pending write here, or joins the started one.
  void wait();

 private:
  friend std::shared_ptr<const Trace> load_trace_write_behind(const std::string& path,
                                                              const LoadOptions& options,
                                                              const SnapshotOptions& snapshot,
                                                              SnapshotWriteBehind& writer);
  Start when_;
  std::function<void()> pending_;
  std::thread thread_;
};

// load_trace(path, options, snapshot), but a due snapshot write runs on
// `writer`'s thread, which shares the (read-only) trace. The same trace and
// the same snapshot file; a failed write is logged as before.
std::shared_ptr<const Trace> load_trace_write_behind(const std::string& path,
                                                     const LoadOptions& options,
                                                     const SnapshotOptions& snapshot,
                                                     SnapshotWriteBehind& writer);
// The same with the default options (snapshots unless JARVIS_NO_SNAPSHOT).
std::shared_ptr<const Trace> load_trace_write_behind(const std::string& path,
                                                     SnapshotWriteBehind& writer);

}  // namespace jarvis
