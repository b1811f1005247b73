// The traces one MCP session (or one CLI run) has loaded, by handle.
//
// A handle ("t1", "t2", ...) names one loaded file. Loading the same file
// again while it is unchanged (same canonical path, size and mtime) returns
// the existing entry instead of parsing it twice. Derived data (call tree,
// report tables, perf rows) is built lazily on first use and cached on the
// entry; every accessor is thread-safe, so tool calls of one session may run
// in parallel.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <typeindex>
#include <vector>

#include "trace/trace.h"

namespace jarvis {

class CallTree;
struct Report;

class LoadedTrace {
 public:
  LoadedTrace(std::string handle, std::string path, uint64_t file_size, int64_t mtime_ns,
              std::shared_ptr<const Trace> trace, double load_seconds)
      : handle_(std::move(handle)),
        path_(std::move(path)),
        file_size_(file_size),
        mtime_ns_(mtime_ns),
        load_seconds_(load_seconds),
        trace_(std::move(trace)) {}

  const std::string& handle() const { return handle_; }
  const std::string& path() const { return path_; }  // canonical path
  uint64_t file_size() const { return file_size_; }
  int64_t mtime_ns() const { return mtime_ns_; }
  double load_seconds() const { return load_seconds_; }
  const Trace& trace() const { return *trace_; }

  // A derived artefact of type T, built by `build` on first request and
  // cached (one per type and key). Concurrent first requests build it once;
  // if `build` throws, nothing is cached and the exception propagates.
  template <class T>
  std::shared_ptr<const T> cached(const std::string& key, const std::function<T()>& build) const {
    std::shared_ptr<Slot> slot = slot_for(std::type_index(typeid(T)), key);
    std::lock_guard<std::mutex> lock(slot->mutex);
    if (!slot->value) slot->value = std::make_shared<const T>(build());
    return std::static_pointer_cast<const T>(slot->value);
  }

 private:
  struct Slot {
    std::mutex mutex;
    std::shared_ptr<const void> value;
  };
  std::shared_ptr<Slot> slot_for(std::type_index type, const std::string& key) const;

  std::string handle_;
  std::string path_;
  uint64_t file_size_;
  int64_t mtime_ns_;
  double load_seconds_;
  std::shared_ptr<const Trace> trace_;
  mutable std::mutex slots_mutex_;
  mutable std::map<std::pair<std::type_index, std::string>, std::shared_ptr<Slot>> slots_;
};

class TraceStore {
 public:
  struct LoadResult {
    std::shared_ptr<const LoadedTrace> entry;
    bool reused = false;  // an unchanged file already loaded: no parse happened
  };

  // Loads `path` (already confined by the caller) or reuses an earlier load
  // of the unchanged file. options.progress is also called once before and
  // once after parsing; returning false cancels (TraceError, nothing kept).
  // Loads of different files run in parallel.
  LoadResult load(const std::string& path, const LoadOptions& options = {});

  // The entry for a handle, or nullptr.
  std::shared_ptr<const LoadedTrace> get(const std::string& handle) const;
  // Forgets a handle; returns false when unknown. Entries still in use by a
  // running call stay alive until that call ends.
  bool unload(const std::string& handle);
  // Every entry, in load order.
  std::vector<std::shared_ptr<const LoadedTrace>> list() const;
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const LoadedTrace>> by_handle_;
  std::vector<std::string> order_;
  uint64_t next_id_ = 1;
};

// The call tree of a loaded trace (TraceLens defaults: no python frames),
// built on first use and cached on the entry.
std::shared_ptr<const CallTree> trace_call_tree(const LoadedTrace& entry);

// The bundled GPU arch matching the trace's GPU name ("H100", "MI300X", ...),
// or "" when none matches.
std::string detect_arch_name(const Trace& trace);

// The full TraceLens report of a loaded trace, cached per arch. `arch` is a
// bundled arch name or an arch JSON path; "" = detect_arch_name (no roofline
// columns when nothing matches), "none" = no arch. Throws std::runtime_error
// (e.g. "No GPU events found in the trace") or perf::GpuArchError.
std::shared_ptr<const Report> trace_report(const LoadedTrace& entry, const std::string& arch = "");

}  // namespace jarvis
