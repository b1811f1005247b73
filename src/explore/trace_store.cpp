#include "explore/trace_store.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

#include <fmt/format.h>

#include "base/random_id.h"
#include "critical_path/graph_file.h"
#include "explore/input_format.h"
#include "explore/rocprof_trace.h"
#include "insights/insights.h"
#include "perf/gpu_arch.h"
#include "report/gpu_timeline.h"
#include "report/report.h"
#include "rocprof/profile.h"
#include "trace/cache_file.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace jarvis {

namespace fs = std::filesystem;

namespace {

std::string random_handle() {
  return fmt::format("s{}", random_hex(16));
}

// A rocprofv3 CSV directory: the directory's device and inode, its CSV
// files' total size and newest mtime (a rewritten CSV makes a new identity).
FileIdentity identify_csv_directory(const fs::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    throw TraceError(fmt::format("{}: {}", dir.string(), std::strerror(errno)));
  FileIdentity id;
  id.device = static_cast<uint64_t>(st.st_dev);
  id.inode = static_cast<uint64_t>(st.st_ino);
  id.path = dir.string();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".csv" || !entry.is_regular_file(ec)) continue;
    id.size += entry.file_size(ec);
    auto mtime = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     entry.last_write_time(ec).time_since_epoch())
                     .count();
    id.mtime_ns = std::max<int64_t>(id.mtime_ns, mtime);
  }
  return id;
}

// A Kineto trace file, a rocprofv3 results file, or a rocprofv3 CSV directory.
FileIdentity identify_input(const std::string& path) {
  std::error_code ec;
  fs::path canonical = fs::canonical(path, ec);
  if (ec) throw TraceError(fmt::format("{}: {}", path, ec.message()));
  if (fs::is_directory(canonical, ec) &&
      detect_input_format(canonical.string()) == InputFormat::RocprofCsv)
    return identify_csv_directory(canonical);
  return identify_file(canonical.string());
}

// Every input goes through the one dispatch: Kineto through its loader (and
// snapshot cache), the other formats through their readers into the same
// event store, keeping what their own tools need on the entry.
std::shared_ptr<const TraceEntry> parse_input(const FileIdentity& id, const LoadOptions& options) {
  InputFormat format = detect_input_format(id.path);
  if (format == InputFormat::KinetoJson) return parse_kineto(id, options);
  auto start = std::chrono::steady_clock::now();
  LoadedInput in = load_non_kineto_input(id.path, format);
  auto trace = std::make_shared<const Trace>(std::move(in.trace));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto entry = std::make_shared<const TraceEntry>(id, trace, seconds, estimate_trace_bytes(*trace));
  if (in.attach) in.attach(LoadedTrace("", entry));
  return entry;
}

TraceStore::HandleInfo describe(const std::string& handle, const TraceEntry& entry) {
  const Trace& trace = entry.trace();
  return {handle,         entry.identity().path, entry.identity().size,
          trace.platform, trace.gpu_name(),      trace.events.size()};
}

}  // namespace

TraceStore::TraceStore(TraceCache& cache, Handles mode, std::chrono::seconds idle_ttl)
    : cache_(cache), mode_(mode), idle_ttl_(idle_ttl) {}

std::string TraceStore::new_handle_locked() {
  if (mode_ == Handles::Capability) return random_handle();
  return fmt::format("t{}", next_id_++);
}

// Capability handles nobody used for idle_ttl are forgotten (their client is
// gone; nothing else would ever release them).
void TraceStore::expire_locked() const {
  if (idle_ttl_.count() <= 0) return;
  auto now = std::chrono::steady_clock::now();
  for (auto it = by_handle_.begin(); it != by_handle_.end();) {
    if (now - it->second.last_used > idle_ttl_) {
      order_.erase(std::remove(order_.begin(), order_.end(), it->first), order_.end());
      it = by_handle_.erase(it);
    } else {
      ++it;
    }
  }
}

TraceStore::LoadResult TraceStore::load(const std::string& path, const LoadOptions& options) {
  FileIdentity id = identify_input(path);
  // The loader polls `progress` only every few thousand events; polling it
  // once before and once after as well makes small loads cancellable too,
  // and a load cancelled at the end is not registered.
  if (options.progress && !options.progress(0, 0)) throw TraceError(id.path + ": load cancelled");
  TraceCache::Acquired got = cache_.acquire(id, options, parse_input);
  const Trace& trace = got.entry->trace();
  if (options.progress && !options.progress(trace.json_bytes, trace.events.size()))
    throw TraceError(id.path + ": load cancelled");
  std::lock_guard<std::mutex> lock(mutex_);
  expire_locked();
  for (auto& [handle, h] : by_handle_) {
    if (!h.ref.identity().same_file(id)) continue;
    h.last_used = std::chrono::steady_clock::now();
    return {std::make_shared<const LoadedTrace>(handle, got.entry), true};
  }
  std::string handle = new_handle_locked();
  by_handle_.emplace(handle, Handle{describe(handle, *got.entry), cache_.reference(id),
                                    std::chrono::steady_clock::now()});
  order_.push_back(handle);
  return {std::make_shared<const LoadedTrace>(handle, got.entry), !got.parsed, true};
}

std::shared_ptr<const LoadedTrace> TraceStore::get(const std::string& handle) const {
  FileIdentity id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    expire_locked();
    auto it = by_handle_.find(handle);
    if (it == by_handle_.end()) {
      bool path_like = handle.ends_with(".json") || handle.ends_with(".gz");
      if (!confine_ || !path_like) return nullptr;
      std::string path = confine_(handle);
      return std::make_shared<const LoadedTrace>(
          handle, cache_.acquire(identify_input(path), {}, parse_input).entry);
    }
    it->second.last_used = std::chrono::steady_clock::now();
    id = it->second.ref.identity();
  }
  // The budget may have evicted the parse: parse again, but only the very
  // file the handle was made for.
  FileIdentity now;
  try {
    now = identify_input(id.path);
  } catch (const TraceError&) {
  }
  if (!now.same_file(id))
    throw TraceError(
        fmt::format("the file behind handle \"{}\" ({}) changed or vanished since load_trace; call "
                    "load_trace again",
                    handle, id.path));
  TraceCache::Acquired acquired = cache_.acquire(id, {}, parse_input);
  return std::make_shared<const LoadedTrace>(handle, std::move(acquired.entry), acquired.parsed);
}

bool TraceStore::unload(const std::string& handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!by_handle_.erase(handle)) return false;
  order_.erase(std::remove(order_.begin(), order_.end(), handle), order_.end());
  return true;
}

std::vector<TraceStore::HandleInfo> TraceStore::list() const {
  std::lock_guard<std::mutex> lock(mutex_);
  expire_locked();
  std::vector<HandleInfo> out;
  if (mode_ == Handles::Capability) return out;
  for (const auto& handle : order_) out.push_back(by_handle_.at(handle).info);
  return out;
}

size_t TraceStore::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return by_handle_.size();
}

std::shared_ptr<const CallTree> trace_call_tree(const LoadedTrace& entry) {
  // Every op-level tool asks for the tree: this is where rocprofv3 traces
  // (kernels only) get their one clear refusal.
  if (rocprof::is_rocprof_trace(entry.trace()))
    throw TraceError(analysis::rocprof_no_tree_message(entry), ErrorKind::Unsupported);
  return entry.cached<CallTree>("tree", [&] { return CallTree(entry.trace()); });
}

namespace {

// The graph cache file of a Kineto trace loaded from its file (its snapshot's
// neighbour), when the file is still the one the trace was read from; none
// for other inputs or when the cache is off.
std::optional<CacheFilePlan> graph_file_of(const LoadedTrace& entry) {
  if (entry.path().empty()) return std::nullopt;
  std::optional<CacheFilePlan> plan = graph_file_of_path(entry.path());
  if (!plan || plan->key.device != entry.entry().identity().device ||
      plan->key.inode != entry.entry().identity().inode ||
      plan->key.size != entry.entry().identity().size ||
      plan->key.mtime_ns != entry.entry().identity().mtime_ns)
    return std::nullopt;
  return plan;
}

}  // namespace

std::optional<CacheFilePlan> graph_file_of_path(const std::string& path) {
  if (detect_input_format(path) != InputFormat::KinetoJson) return std::nullopt;
  return plan_cache_file(path, critical_path::kGraphFileExtension);
}

bool same_trace_state(const std::optional<CacheFilePlan>& before,
                      const std::optional<CacheFilePlan>& after) {
  return before && after && before->file == after->file && before->key == after->key;
}

std::shared_ptr<const insights::StepModelRef> trace_step_model(const LoadedTrace& entry) {
  return entry.cached<insights::StepModelRef>("insights:step_model", [&entry] {
    const std::optional<CacheFilePlan> graph_file = graph_file_of(entry);
    // A graph built here is written to its file behind the session's calls.
    const insights::GraphFileWriteLater write_later = [&entry](std::function<void()> task) {
      entry.entry().run_behind(std::move(task));
    };
    return insights::StepModelRef{insights::build_step_model(
        entry.trace(), *trace_call_tree(entry), graph_file ? &*graph_file : nullptr, write_later)};
  });
}

std::shared_ptr<const GpuTimeline> trace_timeline(const LoadedTrace& entry) {
  auto slot = entry.cached<std::optional<GpuTimeline>>("gpu_timeline", [&] {
    std::optional<GpuTimeline> t;
    try {
      t = compute_gpu_timeline(entry.trace(), *trace_call_tree(entry));
    } catch (const std::runtime_error&) {
      // "No GPU events found in the trace" (or a rocprofv3 trace, which has
      // no call tree): cached as absent.
    }
    return t;
  });
  if (!*slot) return nullptr;
  return std::shared_ptr<const GpuTimeline>(slot, &**slot);
}

std::string detect_arch_name(const Trace& trace) {
  auto upper = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  };
  std::string gpu = upper(trace.gpu_name());
  if (gpu.empty()) return "";
  // Longest name first, so "MI325X" is not taken for "MI300X"-like prefixes.
  std::vector<std::string> names = perf::bundled_gpu_arch_names();
  std::sort(names.begin(), names.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const auto& name : names)
    if (gpu.find(upper(name)) != std::string::npos) return name;
  // "MI300X" traces may name the GPU "AMD Instinct MI300X" or just "MI300".
  for (const auto& name : names) {
    std::string base = upper(name);
    if (!base.empty() && base.back() == 'X' &&
        gpu.find(base.substr(0, base.size() - 1)) != std::string::npos)
      return name;
  }
  return "";
}

std::string canonical_arch_id(const std::string& arch) {
  if (arch.empty() || arch == "none") return "";
  auto upper = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  };
  std::vector<std::string> names = perf::bundled_gpu_arch_names();
  for (const auto& name : names)
    if (upper(name) == upper(arch)) return name;
  std::error_code ec;
  fs::path path = fs::canonical(arch, ec);
  if (ec) return arch;  // load_gpu_arch reports the problem
  if (std::string bundled = perf::bundled_arch_for_file(path.string()); !bundled.empty())
    return bundled;
  return path.string();
}

std::shared_ptr<const std::vector<report::PerfOpRow>> trace_perf_rows(const LoadedTrace& entry,
                                                                      const std::string& arch) {
  std::string name = canonical_arch_id(arch.empty() ? detect_arch_name(entry.trace()) : arch);
  return entry.cached<std::vector<report::PerfOpRow>>("perf_rows:" + name, [&] {
    std::optional<GpuArch> gpu_arch;
    if (!name.empty()) gpu_arch = perf::load_gpu_arch(name);
    return report::unified_perf_rows(entry.trace(), *trace_call_tree(entry),
                                     gpu_arch ? &*gpu_arch : nullptr);
  });
}

std::shared_ptr<const Report> trace_report(const LoadedTrace& entry, const std::string& arch) {
  std::string name = canonical_arch_id(arch.empty() ? detect_arch_name(entry.trace()) : arch);
  return entry.cached<Report>("report:" + name, [&] {
    std::optional<GpuArch> gpu_arch;
    if (!name.empty()) gpu_arch = perf::load_gpu_arch(name);
    ReportOptions options;
    options.arch = gpu_arch ? &*gpu_arch : nullptr;
    auto tree = trace_call_tree(entry);
    auto timeline = trace_timeline(entry);
    options.timeline = timeline.get();  // null: build_report raises "No GPU events ..."
    return build_report(entry.trace(), *tree, options);
  });
}

}  // namespace jarvis
