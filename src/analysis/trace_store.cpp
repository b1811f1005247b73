#include "analysis/trace_store.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <optional>
#include <system_error>

#include <fmt/format.h>

#include "analysis/rocprof_trace.h"
#include "perf/gpu_arch.h"
#include "report/report.h"
#include "rocprof/profile.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace jarvis {

namespace fs = std::filesystem;

std::shared_ptr<LoadedTrace::Slot> LoadedTrace::slot_for(std::type_index type,
                                                         const std::string& key) const {
  std::lock_guard<std::mutex> lock(slots_mutex_);
  auto& slot = slots_[{type, key}];
  if (!slot) slot = std::make_shared<Slot>();
  return slot;
}

namespace {

struct FileIdentity {
  std::string path;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};

// A rocprofv3 CSV directory: its CSV files' total size and newest mtime.
FileIdentity identify_directory(const fs::path& dir) {
  FileIdentity id;
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

FileIdentity identify(const std::string& path) {
  std::error_code ec;
  fs::path canonical = fs::canonical(path, ec);
  if (ec) throw TraceError(fmt::format("{}: {}", path, ec.message()));
  if (fs::is_directory(canonical, ec) &&
      rocprof::detect_input(canonical.string()) == rocprof::InputKind::CsvSet)
    return identify_directory(canonical);
  if (!fs::is_regular_file(canonical, ec))
    throw TraceError(fmt::format("{}: not a regular file", path));
  FileIdentity id;
  id.path = canonical.string();
  id.size = fs::file_size(canonical, ec);
  if (ec) throw TraceError(fmt::format("{}: {}", path, ec.message()));
  auto mtime = fs::last_write_time(canonical, ec);
  if (ec) throw TraceError(fmt::format("{}: {}", path, ec.message()));
  id.mtime_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count();
  return id;
}

}  // namespace

TraceStore::LoadResult TraceStore::load(const std::string& path, const LoadOptions& options) {
  FileIdentity id = identify(path);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& handle : order_) {
      const auto& entry = by_handle_.at(handle);
      if (entry->path() == id.path && entry->file_size() == id.size &&
          entry->mtime_ns() == id.mtime_ns)
        return {entry, true};
    }
  }
  // The loader polls `progress` only every few thousand events; polling it
  // once before and once after as well makes small loads cancellable too,
  // and a load cancelled at the end is not registered.
  if (options.progress && !options.progress(0, 0)) throw TraceError(id.path + ": load cancelled");
  auto start = std::chrono::steady_clock::now();
  // rocprofv3 output (JSON results or CSV set) feeds the same event store;
  // its profile stays on the entry for the rocprof-only tools.
  std::optional<rocprof::Profile> profile;
  if (rocprof::is_rocprof_input(id.path)) profile = rocprof::load_profile(id.path);
  auto trace =
      std::make_shared<Trace>(profile ? rocprof::to_trace(*profile) : load_trace(id.path, options));
  if (options.progress && !options.progress(trace->json_bytes, trace->events.size()))
    throw TraceError(id.path + ": load cancelled");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard<std::mutex> lock(mutex_);
  // Another call may have loaded the same file meanwhile; keep the first.
  for (const auto& handle : order_) {
    const auto& entry = by_handle_.at(handle);
    if (entry->path() == id.path && entry->file_size() == id.size &&
        entry->mtime_ns() == id.mtime_ns)
      return {entry, true};
  }
  std::string handle = fmt::format("t{}", next_id_++);
  auto entry = std::make_shared<const LoadedTrace>(handle, id.path, id.size, id.mtime_ns,
                                                   std::move(trace), seconds);
  if (profile) analysis::attach_rocprof_profile(*entry, std::move(*profile));
  by_handle_[handle] = entry;
  order_.push_back(handle);
  return {entry, false};
}

std::shared_ptr<const LoadedTrace> TraceStore::get(const std::string& handle) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_handle_.find(handle);
  return it == by_handle_.end() ? nullptr : it->second;
}

bool TraceStore::unload(const std::string& handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!by_handle_.erase(handle)) return false;
  order_.erase(std::remove(order_.begin(), order_.end(), handle), order_.end());
  return true;
}

std::vector<std::shared_ptr<const LoadedTrace>> TraceStore::list() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<const LoadedTrace>> out;
  for (const auto& handle : order_) out.push_back(by_handle_.at(handle));
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
    throw TraceError(analysis::rocprof_no_tree_message(entry));
  return entry.cached<CallTree>("tree", [&] { return CallTree(entry.trace()); });
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

std::shared_ptr<const Report> trace_report(const LoadedTrace& entry, const std::string& arch) {
  std::string name = arch.empty() ? detect_arch_name(entry.trace()) : arch;
  if (name == "none") name.clear();
  return entry.cached<Report>("report:" + name, [&] {
    std::optional<GpuArch> gpu_arch;
    if (!name.empty()) gpu_arch = perf::load_gpu_arch(name);
    ReportOptions options;
    options.arch = gpu_arch ? &*gpu_arch : nullptr;
    auto tree = trace_call_tree(entry);
    return build_report(entry.trace(), *tree, options);
  });
}

}  // namespace jarvis
