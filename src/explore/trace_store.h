// The traces one MCP session (or one CLI run) has loaded, by handle.
//
// A handle names one loaded file *for this store only*: sessions never see
// each other's handles. The parsed data lives in a TraceCache shared by all
// stores (keyed by file identity, under a memory budget), so a file loaded by
// several sessions is parsed once, and a handle whose trace was evicted is
// parsed again on next use (refused if the file changed meanwhile). Derived
// data (call tree, report tables, perf rows) is built lazily on first use and
// cached on the shared entry; every accessor is thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "session/trace_cache.h"
#include "trace/cache_file.h"
#include "trace/trace.h"

namespace jarvis::insights {
struct StepModelRef;  // insights/insights.h
}  // namespace jarvis::insights
namespace jarvis::report {
struct PerfOpRow;  // report/perf_tables.h
}  // namespace jarvis::report

namespace jarvis {

class CallTree;
struct Report;
struct GpuTimeline;

// One handle's view of a cached trace, held for the duration of a call.
class LoadedTrace {
 public:
  LoadedTrace(std::string handle, std::shared_ptr<const TraceEntry> entry, bool reloaded = false)
      : handle_(std::move(handle)), entry_(std::move(entry)), reloaded_(reloaded) {}

  const std::string& handle() const { return handle_; }
  const std::string& path() const { return entry_->identity().path; }  // canonical path
  uint64_t file_size() const { return entry_->identity().size; }
  int64_t mtime_ns() const { return entry_->identity().mtime_ns; }
  double load_seconds() const { return entry_->load_seconds(); }
  const Trace& trace() const { return entry_->trace(); }
  const TraceEntry& entry() const { return *entry_; }
  // This lookup parsed the file again: the cache's memory budget had evicted
  // the trace since load_trace (the tools say so in their result).
  bool reloaded() const { return reloaded_; }

  // A derived artefact of type T, built once and cached on the shared entry
  // (see TraceEntry::cached).
  template <class T>
  std::shared_ptr<const T> cached(const std::string& key, const std::function<T()>& build) const {
    return entry_->cached<T>(key, build);
  }

 private:
  std::string handle_;
  std::shared_ptr<const TraceEntry> entry_;
  bool reloaded_ = false;
};

class TraceStore {
 public:
  // Sequential: "t1", "t2", ... listed by list(); one per session.
  // Capability: unguessable random handles, never listed; for stateless
  // clients, where knowing the handle is the only proof of having loaded it.
  enum class Handles { Sequential, Capability };

  explicit TraceStore(TraceCache& cache = TraceCache::process_default(),
                      Handles mode = Handles::Sequential,
                      std::chrono::seconds idle_ttl = std::chrono::seconds(0));
  TraceStore(const TraceStore&) = delete;
  TraceStore& operator=(const TraceStore&) = delete;

  struct LoadResult {
    std::shared_ptr<const LoadedTrace> entry;
    bool reused = false;  // no parse happened (this store or another had it loaded)
    // This load made the handle (the store had no handle for the file yet):
    // a caller that fails after load() unloads it, so no failed load stays listed.
    bool new_handle = false;
  };

  // Loads `path` (already confined by the caller) or reuses the cached parse
  // of the unchanged file. options.progress is also called once before and
  // once after parsing; returning false cancels (TraceError, nothing kept).
  LoadResult load(const std::string& path, const LoadOptions& options = {});

  // The entry for a handle, or nullptr when unknown. Parses the file again
  // when the cache evicted it; throws TraceError when it changed since.
  std::shared_ptr<const LoadedTrace> get(const std::string& handle) const;
  // Forgets a handle; returns false when unknown. Entries still in use by a
  // running call stay alive until that call ends.
  bool unload(const std::string& handle);

  struct HandleInfo {
    std::string handle;
    std::string path;
    uint64_t file_bytes = 0;
    Platform platform = Platform::Unknown;
    std::string gpu_name;
    size_t events = 0;
  };
  // Every handle, in load order (none in Capability mode).
  std::vector<HandleInfo> list() const;
  size_t size() const;
  // Held by the thread that forks a worker (src/mcp/worker_call.h): taken
  // before the cache's, the order load() takes them in.
  std::unique_lock<std::mutex> hold_for_fork() const { return std::unique_lock(mutex_); }
  bool lists_handles() const { return mode_ == Handles::Sequential; }
  // Lets get() take a trace path where a handle is expected: `confine`
  // returns the confined path (or throws); the trace is served from the
  // shared cache for that call only, no handle is kept. Stateless clients
  // can so name a trace in every request instead of sharing handles.
  void set_path_loader(std::function<std::string(const std::string&)> confine) {
    confine_ = std::move(confine);
  }
  TraceCache& cache() const { return cache_; }

 private:
  struct Handle {
    HandleInfo info;
    TraceCache::Ref ref;
    std::chrono::steady_clock::time_point last_used;
  };
  std::string new_handle_locked();
  void expire_locked() const;

  TraceCache& cache_;
  Handles mode_;
  std::chrono::seconds idle_ttl_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, Handle> by_handle_;
  mutable std::vector<std::string> order_;
  uint64_t next_id_ = 1;
  std::function<std::string(const std::string&)> confine_;
};

// The call tree of a loaded trace (TraceLens defaults: no python frames),
// built on first use and cached on the entry.
std::shared_ptr<const CallTree> trace_call_tree(const LoadedTrace& entry);

// compute_gpu_timeline over trace_call_tree, built once per loaded trace and
// shared by the report, the health block, the insights and gpu_timeline;
// null when the trace has no linked GPU event.
std::shared_ptr<const GpuTimeline> trace_timeline(const LoadedTrace& entry);

// The trace's step model (insights::build_step_model over trace_call_tree:
// the dependency graph, its recorded and un-profiled analyses, the what-if
// base), built once per loaded trace (MCP load_trace builds it for the
// health block) and read by every later analysis of it; its `model` is
// null when the trace gives no graph.
std::shared_ptr<const insights::StepModelRef> trace_step_model(const LoadedTrace& entry);

// The step model's graph cache file (critical_path/graph_file.h) of the
// Kineto trace file at `path`, for a caller that loads the trace itself (the
// CLI): call it before and after the load and use the file only when both
// plans name the same state of the file (same_trace_state). Nullopt for
// other inputs or when the cache is off.
std::optional<CacheFilePlan> graph_file_of_path(const std::string& path);
bool same_trace_state(const std::optional<CacheFilePlan>& before,
                      const std::optional<CacheFilePlan>& after);

// The unified perf rows of a loaded trace (report::unified_perf_rows: every
// op's row with its metrics and kernels) for `arch` as trace_report reads
// it ("" = detect_arch_name, "none" = no arch), built once per entry and
// canonical arch: MCP load_trace builds the detected arch's beside the step
// model, so the insights of a later call (its worker inherits them) and its
// other readers start from them. Throws perf::GpuArchError.
std::shared_ptr<const std::vector<report::PerfOpRow>> trace_perf_rows(const LoadedTrace& entry,
                                                                      const std::string& arch = "");

// The bundled GPU arch matching the trace's GPU name ("H100", "MI300X", ...),
// or "" when none matches.
std::string detect_arch_name(const Trace& trace);

// One spelling per arch: a bundled name in its file's case ("mi300x",
// "arch/MI300X.json" -> "MI300X"), another arch file as its canonical path,
// "" for "" and "none". Keys the report cache, so spellings share a report.
std::string canonical_arch_id(const std::string& arch);

// The full TraceLens report of a loaded trace, cached per canonical arch id.
// `arch` is a bundled arch name or an arch JSON path; "" = detect_arch_name
// (no roofline columns when nothing matches), "none" = no arch. Throws std::runtime_error
// (e.g. "No GPU events found in the trace") or perf::GpuArchError.
std::shared_ptr<const Report> trace_report(const LoadedTrace& entry, const std::string& arch = "");

}  // namespace jarvis
