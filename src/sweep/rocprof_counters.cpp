// The hardware counters of the top-variance GEMM kernels across
// configurations (issue 12 x 11): the seed profiles each configuration again
// with rocprofv3 (rocprof_traces/ beside torch_profiler/), restricted to the
// suspicious kernels by the job of output 6. This joins those outputs back to
// the kernels of gemm_variance, one row per configuration, rocprofv3 output
// and kernel.
#include <filesystem>
#include <set>

#include "rocprof/counters.h"
#include "rocprof/profile.h"
#include "sweep/sweep.h"
#include "trace/trace.h"

namespace jarvis::sweep {
namespace {

namespace fs = std::filesystem;

// The rocprof_traces/ directory nearest above the run, not above the sweep
// root; "" when there is none.
std::string rocprof_dir_of(const Sweep& sweep, const Run& run) {
  std::error_code ec;
  fs::path root = fs::weakly_canonical(sweep.root, ec);
  fs::path p = fs::weakly_canonical(run.input.path, ec).parent_path();
  for (; !p.empty(); p = p.parent_path()) {
    if (fs::is_directory(p / "rocprof_traces", ec)) return (p / "rocprof_traces").string();
    if (p == root || p == p.parent_path()) break;
  }
  return "";
}

// rocprofv3 may append the code-object suffix ".kd" to kernel symbols.
std::string without_kd(const std::string& name) {
  return name.ends_with(".kd") ? name.substr(0, name.size() - 3) : name;
}

std::set<std::string> variance_kernels(const Sweep& sweep, size_t top_k) {
  Table variance = gemm_variance_table(sweep, top_k);
  std::set<std::string> names;
  int col = variance.col("kernel_name");
  for (const auto& row : variance.rows)
    if (col >= 0 && row[col].is_text()) names.insert(row[col].text());
  return names;
}

struct Output {
  std::string config, dir, path;
  std::vector<rocprof::KernelCounters> kernels;
  std::string error;
};

// Each configuration's rocprof outputs once (several ranks share a directory).
std::vector<Output> config_outputs(const Sweep& sweep) {
  std::vector<Output> out;
  std::set<std::string> seen_dirs;
  for (const Run& run : sweep.runs) {
    std::string dir = rocprof_dir_of(sweep, run);
    if (dir.empty() || !seen_dirs.insert(dir).second) continue;
    for (const std::string& path : rocprof::find_outputs(dir)) {
      Output o{sweep.config_label(run), dir, path, {}, ""};
      try {
        o.kernels = rocprof::kernel_counters_from_file(path);
      } catch (const std::exception& e) {
        o.error = e.what();
      }
      out.push_back(std::move(o));
    }
  }
  return out;
}

}  // namespace

Table gemm_counters_table(const Sweep& sweep, size_t top_k) {
  std::set<std::string> wanted = variance_kernels(sweep, top_k);
  std::vector<Output> outputs = config_outputs(sweep);
  // Columns: every counter and derived metric any matched kernel has, sorted.
  std::set<std::string> counters, derived;
  for (const Output& o : outputs)
    for (const auto& k : o.kernels)
      if (wanted.count(without_kd(k.name))) {
        for (const auto& [name, agg] : k.counters) counters.insert(name);
        for (const auto& [name, agg] : k.derived) derived.insert(name);
      }
  std::vector<std::string> cols = {"config",     "rocprof_output",     "kernel_name",
                                   "dispatches", "counted_dispatches", "mean_kernel_time_us"};
  for (const auto& c : counters) cols.push_back(c + "_mean");
  for (const auto& d : derived)
    for (const char* s : {"_mean", "_min", "_max"}) cols.push_back(d + s);
  cols.push_back("error");
  Table t("gemm_counters", cols);
  for (const Output& o : outputs) {
    if (!o.error.empty()) {
      std::vector<Cell> row(cols.size());
      row[0] = Cell(o.config);
      row[1] = Cell(o.path);
      row.back() = Cell(o.error);
      t.rows.push_back(std::move(row));
      continue;
    }
    for (const auto& k : o.kernels) {
      if (!wanted.count(without_kd(k.name))) continue;
      std::vector<Cell> row = {Cell(o.config),
                               Cell(o.path),
                               Cell(without_kd(k.name)),
                               Cell(k.dispatches),
                               Cell(k.counted_dispatches),
                               Cell(k.mean_ns / 1000.0)};
      for (const auto& c : counters) {
        auto it = k.counters.find(c);
        row.push_back(it == k.counters.end() ? Cell() : Cell(it->second.mean));
      }
      for (const auto& d : derived) {
        auto it = k.derived.find(d);
        if (it == k.derived.end()) {
          row.insert(row.end(), 3, Cell());
          continue;
        }
        row.insert(row.end(), {Cell(it->second.mean), Cell(it->second.min), Cell(it->second.max)});
      }
      row.push_back(Cell());
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

}  // namespace jarvis::sweep
