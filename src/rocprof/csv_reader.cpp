// The rocprofv3 CSV set of one process. Files are found by their suffix
// next to each other (<prefix>kernel_trace.csv, <prefix>agent_info.csv, ...);
// the kernel trace is required, the others are read when present. Column
// names are those rocprofv3 writes (ROCprofiler-SDK tool, generateCSV);
// optional columns of newer versions (Stream_Id, Accum_VGPR_Count, ...)
// default to 0.
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/table.h"
#include "rocprof/io.h"
#include "rocprof/profile.h"
#include "trace/byte_source.h"

namespace jarvis::rocprof {

namespace {

namespace fs = std::filesystem;

constexpr const char* kKernelTrace = "kernel_trace.csv";
constexpr const char* kAgentInfo = "agent_info.csv";
constexpr const char* kCounters = "counter_collection.csv";
constexpr const char* kKernelStats = "kernel_stats.csv";
constexpr const char* kMemoryCopy = "memory_copy_trace.csv";

// The files of one process's CSV set.
struct CsvSet {
  fs::path dir;
  std::string prefix;  // "908_"
  fs::path file(const char* suffix) const { return dir / (prefix + suffix); }
  bool has(const char* suffix) const {
    std::error_code ec;
    return fs::is_regular_file(file(suffix), ec);
  }
};

// Prefixes of the sets in a directory (from kernel traces and counter files).
std::vector<std::string> prefixes_in(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    for (const char* suffix : {kKernelTrace, kCounters})
      if (name.ends_with(suffix)) {
        std::string prefix = name.substr(0, name.size() - std::string_view(suffix).size());
        if (std::find(out.begin(), out.end(), prefix) == out.end()) out.push_back(prefix);
      }
  }
  std::sort(out.begin(), out.end());
  return out;
}

CsvSet resolve_set(const std::string& path) {
  std::error_code ec;
  fs::path p(path);
  if (fs::is_directory(p, ec)) {
    auto prefixes = prefixes_in(p);
    if (prefixes.empty())
      throw TraceError(path + ": no rocprofv3 *_kernel_trace.csv or *_counter_collection.csv");
    if (prefixes.size() > 1)
      throw TraceError(
          fmt::format("{}: holds the CSV sets of several processes ({}); pass one of their files",
                      path, fmt::join(prefixes, ", ")));
    return {p, prefixes[0]};
  }
  std::string name = p.filename().string();
  for (const char* suffix : {kKernelTrace, kAgentInfo, kCounters, kKernelStats, kMemoryCopy})
    if (name.ends_with(suffix))
      return {p.parent_path(), name.substr(0, name.size() - std::string_view(suffix).size())};
  throw TraceError(path + ": not a rocprofv3 CSV file (expected *_kernel_trace.csv, ...)");
}

// A CSV file with its required columns checked.
class CsvFile {
 public:
  CsvFile(const fs::path& path, const std::vector<std::string>& required)
      : path_(path.string()), table_(parse_csv(io::read_text(path_), path.filename().string())) {
    std::vector<std::string> missing;
    for (const auto& c : required)
      if (table_.col(c) < 0) missing.push_back(c);
    if (!missing.empty())
      throw TraceError(fmt::format("{}: missing column(s) {} (columns: {})", path_,
                                   fmt::join(missing, ", "), fmt::join(table_.columns, ", ")));
  }
  size_t rows() const { return table_.rows.size(); }
  bool has(std::string_view column) const { return table_.col(column) >= 0; }
  std::string text(size_t row, std::string_view column) const {
    int c = table_.col(column);
    if (c < 0 || static_cast<size_t>(c) >= table_.rows[row].size()) return "";
    const Cell& cell = table_.rows[row][static_cast<size_t>(c)];
    return cell.is_text() ? cell.text() : "";
  }
  // Integer cell; a missing optional column gives `fallback`.
  int64_t integer(size_t row, std::string_view column, int64_t fallback = 0) const {
    if (!has(column)) return fallback;
    std::string t = text(row, column);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec == std::errc() && p == t.data() + t.size()) return v;
    double d = number(row, column);
    return static_cast<int64_t>(d);
  }
  double number(size_t row, std::string_view column) const {
    std::string t = text(row, column);
    char* end = nullptr;
    double v = t.empty() ? 0.0 : std::strtod(t.c_str(), &end);
    if (t.empty() || end != t.c_str() + t.size())
      throw TraceError(
          fmt::format("{}: row {}: {} is not a number: '{}'", path_, row + 2, column, t));
    return v;
  }

 private:
  std::string path_;
  Table table_;
};

// "Agent 2" / "GPU 0" / "2": the agent index rocprofv3 writes.
struct AgentRef {
  std::string kind;  // "Agent", "GPU", "CPU" or "" for a bare number
  int64_t index = 0;
};

AgentRef parse_agent_ref(const std::string& text) {
  AgentRef ref;
  size_t space = text.rfind(' ');
  std::string num = space == std::string::npos ? text : text.substr(space + 1);
  if (space != std::string::npos) ref.kind = text.substr(0, space);
  std::from_chars(num.data(), num.data() + num.size(), ref.index);
  return ref;
}

// Agent handle (Node_Id) for an agent reference; the index itself when the
// set has no agent_info.csv.
int64_t agent_handle(const Profile& p, const AgentRef& ref) {
  int64_t gpu_rank = 0;
  for (const Agent& a : p.agents) {
    if (ref.kind == "GPU" || ref.kind == "CPU") {
      if (a.gpu == (ref.kind == "GPU") && gpu_rank++ == ref.index) return a.handle;
    } else if (a.logical_node_id == ref.index) {
      return a.handle;
    }
  }
  for (const Agent& a : p.agents)
    if (a.node_id == ref.index) return a.handle;
  return ref.index;
}

void read_agent_info(const fs::path& file, Profile& p) {
  CsvFile csv(file, {"Node_Id", "Agent_Type", "Cu_Count", "Name"});
  for (size_t r = 0; r < csv.rows(); ++r) {
    Agent a;
    a.node_id = csv.integer(r, "Node_Id");
    a.handle = a.node_id;
    a.logical_node_id = csv.integer(r, "Logical_Node_Id", a.node_id);
    a.gpu = csv.text(r, "Agent_Type") == "GPU";
    a.name = csv.text(r, "Name");
    a.product_name = csv.text(r, "Product_Name");
    a.cu_count = csv.integer(r, "Cu_Count");
    a.simd_per_cu = csv.integer(r, "Simd_Per_Cu");
    a.num_xcc = std::max<int64_t>(1, csv.integer(r, "Num_Xcc", 1));
    a.wave_front_size = csv.integer(r, "Wave_Front_Size", 64);
    a.max_waves_per_cu = csv.integer(r, "Max_Waves_Per_Cu");
    a.max_clock_mhz = csv.integer(r, "Max_Engine_Clk_Fcompute");
    p.agents.push_back(std::move(a));
  }
}

uint32_t intern(std::vector<std::string>& names, std::unordered_map<std::string, uint32_t>& index,
                const std::string& name) {
  auto [it, added] = index.try_emplace(name, static_cast<uint32_t>(names.size()));
  if (added) names.push_back(name);
  return it->second;
}

void read_kernel_trace(const fs::path& file, Profile& p) {
  CsvFile csv(
      file, {"Agent_Id", "Queue_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name",
             "Correlation_Id", "Start_Timestamp", "End_Timestamp", "Workgroup_Size_X",
             "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"});
  std::unordered_map<std::string, uint32_t> names;
  // Older rocprofv3 versions name the LDS / scratch columns after the
  // kernel descriptor fields.
  const char* lds = csv.has("LDS_Block_Size") ? "LDS_Block_Size" : "Group_Segment_Size";
  const char* scratch = csv.has("Scratch_Size") ? "Scratch_Size" : "Private_Segment_Size";
  for (size_t r = 0; r < csv.rows(); ++r) {
    Dispatch d;
    d.kernel = intern(p.kernel_names, names, csv.text(r, "Kernel_Name"));
    d.kernel_id = csv.integer(r, "Kernel_Id");
    d.dispatch_id = csv.integer(r, "Dispatch_Id");
    d.correlation_id = csv.integer(r, "Correlation_Id");
    d.start_ns = csv.integer(r, "Start_Timestamp");
    d.end_ns = csv.integer(r, "End_Timestamp");
    d.stream = csv.integer(r, "Stream_Id");
    d.queue = csv.integer(r, "Queue_Id");
    d.agent = agent_handle(p, parse_agent_ref(csv.text(r, "Agent_Id")));
    d.thread_id = csv.integer(r, "Thread_Id");
    d.grid = {csv.integer(r, "Grid_Size_X"), csv.integer(r, "Grid_Size_Y"),
              csv.integer(r, "Grid_Size_Z")};
    d.workgroup = {csv.integer(r, "Workgroup_Size_X"), csv.integer(r, "Workgroup_Size_Y"),
                   csv.integer(r, "Workgroup_Size_Z")};
    d.lds_bytes = csv.integer(r, lds);
    d.scratch_bytes = csv.integer(r, scratch);
    d.arch_vgpr = csv.integer(r, "VGPR_Count");
    d.accum_vgpr = csv.integer(r, "Accum_VGPR_Count");
    d.sgpr = csv.integer(r, "SGPR_Count");
    p.dispatches.push_back(d);
  }
}

// One row per dispatch and counter, joined to the kernel trace by
// Dispatch_Id (unique within a process).
void read_counters(const fs::path& file, Profile& p) {
  CsvFile csv(file, {"Dispatch_Id", "Kernel_Name", "Grid_Size", "Workgroup_Size", "LDS_Block_Size",
                     "Scratch_Size", "VGPR_Count", "SGPR_Count", "Counter_Name", "Counter_Value"});
  std::unordered_map<int64_t, size_t> by_dispatch;
  for (size_t k = 0; k < p.dispatches.size(); ++k) by_dispatch[p.dispatches[k].dispatch_id] = k;
  std::unordered_map<std::string, uint32_t> names;
  for (size_t r = 0; r < csv.rows(); ++r) {
    int64_t id = csv.integer(r, "Dispatch_Id");
    auto it = by_dispatch.find(id);
    if (it == by_dispatch.end())
      throw TraceError(fmt::format(
          "{}: row {}: Dispatch_Id {} is not in the kernel trace (files of different runs?)",
          file.string(), r + 2, id));
    Dispatch& d = p.dispatches[it->second];
    // Older kernel traces lack the register columns; the counter rows have them.
    if (d.arch_vgpr == 0) d.arch_vgpr = csv.integer(r, "VGPR_Count");
    if (d.accum_vgpr == 0) d.accum_vgpr = csv.integer(r, "Accum_VGPR_Count");
    if (d.sgpr == 0) d.sgpr = csv.integer(r, "SGPR_Count");
    p.counters.push_back({it->second, intern(p.counter_names, names, csv.text(r, "Counter_Name")),
                          csv.number(r, "Counter_Value")});
  }
}

void read_kernel_stats(const fs::path& file, Profile& p) {
  CsvFile csv(file,
              {"Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage", "MinNs", "MaxNs"});
  for (size_t r = 0; r < csv.rows(); ++r)
    p.kernel_stats.push_back(
        {csv.text(r, "Name"), csv.integer(r, "Calls"), csv.number(r, "TotalDurationNs"),
         csv.number(r, "AverageNs"), csv.number(r, "Percentage"), csv.number(r, "MinNs"),
         csv.number(r, "MaxNs"), csv.has("StdDev") ? csv.number(r, "StdDev") : 0.0});
}

void read_memory_copies(const fs::path& file, Profile& p) {
  CsvFile csv(file, {"Direction", "Source_Agent_Id", "Destination_Agent_Id", "Start_Timestamp",
                     "End_Timestamp"});
  for (size_t r = 0; r < csv.rows(); ++r) {
    MemoryCopy c;
    c.start_ns = csv.integer(r, "Start_Timestamp");
    c.end_ns = csv.integer(r, "End_Timestamp");
    c.src_agent = agent_handle(p, parse_agent_ref(csv.text(r, "Source_Agent_Id")));
    c.dst_agent = agent_handle(p, parse_agent_ref(csv.text(r, "Destination_Agent_Id")));
    c.stream = csv.integer(r, "Stream_Id");
    c.direction = csv.text(r, "Direction");
    p.copies.push_back(std::move(c));
  }
}

uint64_t file_size_or_zero(const fs::path& f) {
  std::error_code ec;
  auto n = fs::file_size(f, ec);
  return ec ? 0 : n;
}

}  // namespace

std::vector<std::string> find_outputs(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.ends_with("_results.json") || name.ends_with("_results.json.gz"))
      out.push_back(entry.path().string());
  }
  for (const auto& prefix : prefixes_in(dir)) {
    CsvSet set{dir, prefix};
    out.push_back((set.has(kKernelTrace) ? set.file(kKernelTrace) : set.file(kCounters)).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Profile load_profile_csv(const std::string& path) {
  CsvSet set = resolve_set(path);
  if (!set.has(kKernelTrace)) {
    std::error_code ec;
    struct stat st;
    if (fs::exists(set.file(kKernelTrace), ec))  // there, but a FIFO or device: say so
      open_trace_file(set.file(kKernelTrace).string(), st);
    if (set.has(kCounters))
      throw TraceError(fmt::format(
          "{}: a counter_collection.csv needs its kernel trace ({} not found); run rocprofv3 "
          "with --kernel-trace as well as --pmc",
          set.file(kCounters).string(), set.file(kKernelTrace).string()));
    throw TraceError(fmt::format("{}: {} not found", path, set.file(kKernelTrace).string()));
  }
  Profile p;
  p.path = path;
  p.format = "csv";
  std::from_chars(set.prefix.data(), set.prefix.data() + set.prefix.size(), p.pid);
  if (set.has(kAgentInfo)) read_agent_info(set.file(kAgentInfo), p);
  read_kernel_trace(set.file(kKernelTrace), p);
  if (set.has(kCounters)) read_counters(set.file(kCounters), p);
  if (set.has(kKernelStats)) read_kernel_stats(set.file(kKernelStats), p);
  if (set.has(kMemoryCopy)) read_memory_copies(set.file(kMemoryCopy), p);
  for (const char* s : {kKernelTrace, kAgentInfo, kCounters, kKernelStats, kMemoryCopy})
    if (set.has(s)) p.file_bytes += file_size_or_zero(set.file(s));
  p.input_bytes = p.file_bytes;
  return p;
}

}  // namespace jarvis::rocprof
