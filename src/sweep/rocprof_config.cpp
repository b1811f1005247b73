// Output 6: a rocprofv3 input job that traces only the given kernels and
// collects the CU-utilisation counters of the seed's profile. rocprofv3
// searches the include regex in each kernel's full name, so every name is
// escaped and the alternation anchored: a kernel is selected only when its
// whole name equals one of the listed names.
#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/output_guard.h"
#include "sweep/sweep.h"

namespace jarvis::sweep {
namespace {

const std::vector<std::string>& counters() {
  static const std::vector<std::string> c = {"SQ_BUSY_CU_CYCLES", "SQ_WAVES", "SQ_INSTS_MFMA",
                                             "SQ_INSTS_VALU"};
  return c;
}

std::string escape_alternatives(const std::vector<std::string>& kernels) {
  std::string out;
  for (const std::string& k : kernels) {
    if (!out.empty()) out += '|';
    std::string body = exact_kernel_regex(k);
    out += body.substr(1, body.size() - 2);  // drop the per-name anchors
  }
  return "^(" + out + ")$";
}

// YAML single-quoted scalar: backslashes are literal, quotes are doubled.
std::string yaml_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string make_yaml(const std::string& regex, size_t n) {
  std::string y = fmt::format(
      "# rocprofv3 input (rocprofv3 -i FILE.yaml -- <app>), written by jarvis rocprof-config.\n"
      "# Traces only the {} kernel(s) listed in the companion _kernel_list.txt: the regex is\n"
      "# anchored and escaped, so each selects exactly one full kernel name.\n"
      "jobs:\n"
      "  - kernel_include_regex: {}\n"
      "    kernel_trace: true\n"
      "    stats: true\n"
      "    output_format: [json, csv]\n"
      "    pmc:\n",
      n, yaml_quote(regex));
  for (const auto& c : counters()) y += "      - " + c + "\n";
  return y;
}

}  // namespace

std::string exact_kernel_regex(const std::string& kernel_name) {
  static const std::string special = R"(\^$.|?*+()[]{})";
  std::string out = "^";
  for (char c : kernel_name) {
    if (special.find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out + "$";
}

RocprofConfig rocprof_config(std::vector<std::string> kernels) {
  std::set<std::string> distinct(kernels.begin(), kernels.end());
  distinct.erase("");
  if (distinct.empty()) throw SweepError("no kernel name to profile");
  RocprofConfig cfg;
  cfg.kernels.assign(distinct.begin(), distinct.end());
  cfg.regex = escape_alternatives(cfg.kernels);
  const std::string& regex = cfg.regex;
  cfg.yaml = make_yaml(regex, cfg.kernels.size());
  nlohmann::json job = {{"kernel_include_regex", regex},
                        {"kernel_trace", true},
                        {"stats", true},
                        {"output_format", {"json", "csv"}},
                        {"pmc", counters()}};
  cfg.json = nlohmann::json{{"jobs", {job}}}.dump(2) + "\n";
  cfg.kernel_list = fmt::format("# {} kernel(s) selected by the rocprofv3 job, one per line\n",
                                cfg.kernels.size());
  for (const auto& k : cfg.kernels) cfg.kernel_list += k + "\n";
  return cfg;
}

const char* kernel_vendor(const std::vector<std::string>& kernels) {
  // Names only a vendor's libraries and compilers give their kernels.
  static const char* const nvidia[] = {"nvjet",   "sm80_",  "sm90_",         "sm100_", "cutlass",
                                       "ampere_", "volta_", "turing_",       "hopper", "cublas",
                                       "xmma",    "cudnn",  "gemv2T_kernel", "gemvNSP"};
  static const char* const amd[] = {"Cijk_",  "rocblas", "hipblaslt", "rccl", "__amd_rocclr",
                                    "MIOpen", "miopen",  "igemm",     "ck::", "ck_tile"};
  bool nv = false, am = false;
  for (const std::string& k : kernels) {
    for (const char* m : nvidia) nv = nv || k.find(m) != std::string::npos;
    for (const char* m : amd) am = am || k.find(m) != std::string::npos;
  }
  if (nv && !am) return "nvidia";
  if (am && !nv) return "amd";
  return "unknown";
}

std::string nsight_compute_command(std::vector<std::string> kernels) {
  std::set<std::string> distinct(kernels.begin(), kernels.end());
  distinct.erase("");
  if (distinct.empty()) throw SweepError("no kernel name to profile");
  std::vector<std::string> names(distinct.begin(), distinct.end());
  // Kineto records the demangled name with its template arguments, which is
  // what --kernel-name-base demangled matches the regex against.
  std::string regex = escape_alternatives(names);
  std::string quoted = "'";
  for (char c : regex) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  return fmt::format(
      "ncu --target-processes all --kernel-name-base demangled --kernel-name regex:{} "
      "--launch-skip 10 --launch-count 50 "
      "--metrics gpu__time_duration.sum,sm__cycles_active.avg,"
      "sm__throughput.avg.pct_of_peak_sustained_elapsed,"
      "sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,"
      "launch__waves_per_multiprocessor,"
      "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,"
      "smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed "
      "-o jarvis_gemm_kernels -- <app>",
      quoted);
}

std::vector<std::string> kernels_from_csv(const std::string& csv_path) {
  note_input_file(csv_path);  // never a target of this process's writes
  Table t = read_csv_file(csv_path);
  int c = t.col("kernel_name");
  if (c < 0) throw SweepError(csv_path + " has no kernel_name column");
  std::vector<std::string> names;
  for (const auto& row : t.rows)
    if (row[c].is_text()) names.push_back(row[c].text());
  return names;
}

std::vector<std::string> rocprof_config_files(const std::string& yaml_path) {
  std::string stem = yaml_path;
  bool yaml = false;
  for (const char* ext : {".yaml", ".yml"}) {
    std::string e = ext;
    if (stem.size() > e.size() && stem.compare(stem.size() - e.size(), e.size(), e) == 0) {
      stem.resize(stem.size() - e.size());
      yaml = true;
      break;
    }
  }
  // The job's siblings are named after it: any other name would put the
  // JSON and the kernel list beside a file of the user's (a trace).
  if (!yaml) throw SweepError("'" + yaml_path + "': the rocprofv3 job must be a .yaml/.yml file");
  return {yaml_path, stem + ".json", stem + "_kernel_list.txt"};
}

std::vector<std::string> write_rocprof_config(const RocprofConfig& config,
                                              const std::string& yaml_path) {
  std::vector<std::string> files = rocprof_config_files(yaml_path);
  auto lock = lock_output_dir(std::filesystem::absolute(yaml_path).parent_path());
  // One set: a refused sibling (a plan.json of the user's) leaves all three unwritten.
  write_files_atomic(
      {{files[0], config.yaml}, {files[1], config.json}, {files[2], config.kernel_list}});
  return files;
}

}  // namespace jarvis::sweep
