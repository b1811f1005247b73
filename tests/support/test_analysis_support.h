// Helpers for the agent-workflow golden tests: JSON comparison with the
// reference tolerance, conformance-dir arch descriptions, temp dirs.
#pragma once

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "categories/category_analysis_common.h"
#include "categories/prepare.h"
#include "golden.h"

namespace jarvis::testing {

using analysis::ojson;

// Compares two JSON values: same object keys (order ignored), same array
// lengths, numbers within rel_tol (int/float spelling ignored), strings via
// `normalize` (used to strip temp-dir prefixes from recorded paths).
inline void compare_json(const ojson& exp, const ojson& act, const std::string& path,
                         std::vector<std::string>& problems,
                         const std::function<std::string(const std::string&)>& normalize,
                         double rel_tol = 1e-5) {
  if (problems.size() > 30) return;
  if (exp.is_number() && act.is_number()) {
    double a = exp.get<double>(), b = act.get<double>();
    double diff = std::fabs(a - b);
    if (!(diff <= rel_tol * std::max(std::fabs(a), std::fabs(b)) || diff < 1e-9))
      problems.push_back(path + ": expected " + exp.dump() + ", got " + act.dump());
    return;
  }
  if (exp.type() != act.type()) {
    problems.push_back(path + ": type differs: expected " + exp.dump().substr(0, 200) + ", got " +
                       act.dump().substr(0, 200));
    return;
  }
  if (exp.is_object()) {
    for (const auto& [k, v] : exp.items()) {
      if (!act.contains(k))
        problems.push_back(path + "." + k + ": missing");
      else
        compare_json(v, act[k], path + "." + k, problems, normalize, rel_tol);
    }
    for (const auto& [k, v] : act.items())
      if (!exp.contains(k)) problems.push_back(path + "." + k + ": unexpected key");
    return;
  }
  if (exp.is_array()) {
    if (exp.size() != act.size()) {
      problems.push_back(path + ": array size " + std::to_string(exp.size()) + " vs " +
                         std::to_string(act.size()));
      return;
    }
    for (size_t i = 0; i < exp.size(); ++i)
      compare_json(exp[i], act[i], path + "[" + std::to_string(i) + "]", problems, normalize,
                   rel_tol);
    return;
  }
  if (exp.is_string()) {
    if (normalize(exp.get<std::string>()) != normalize(act.get<std::string>()))
      problems.push_back(path + ": expected \"" + exp.get<std::string>().substr(0, 200) +
                         "\", got \"" + act.get<std::string>().substr(0, 200) + "\"");
    return;
  }
  if (exp != act) problems.push_back(path + ": expected " + exp.dump() + ", got " + act.dump());
}

inline std::string join_problems(const std::vector<std::string>& p) {
  std::string out;
  for (const auto& s : p) out += s + "\n";
  return out;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The arch dict a conformance dir was produced with (COMMANDS.txt line
// "arch/<NAME>.json: {...}") and its platform name.
struct ConformanceArch {
  std::string platform;
  ojson arch;
};

inline ConformanceArch conformance_arch(const std::string& dir) {
  std::istringstream in(read_text(dir + "/COMMANDS.txt"));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("arch/")) continue;
    auto colon = line.find(".json: ");
    if (colon == std::string::npos) continue;
    return {line.substr(5, colon - 5), ojson::parse(line.substr(colon + 7))};
  }
  return {};
}

// A fresh directory under the system temp dir, removed on destruction.
struct TempDir {
  std::string path;
  TempDir() {
    std::random_device rd;
    path = (std::filesystem::temp_directory_path() /
            ("jarvis_agent_test_" + std::to_string(rd()) + std::to_string(rd())))
               .string();
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// Conformance dirs that carry orchestrator reference outputs.
inline std::vector<std::string> agent_conformance_dirs() {
  std::vector<std::string> out;
  for (const auto& d : golden::conformance_dirs())
    if (std::filesystem::exists(d + "/category_data/category_manifest.json")) out.push_back(d);
  return out;
}

// Runs prepare on a conformance dir's reference perf CSVs into `out`,
// handing in the reference trace-derived files (multi-kernel data and
// fusion candidates) so only the table-driven logic is under test.
inline analysis::PrepareResult prepare_from_reference(const std::string& dir,
                                                      const std::string& out,
                                                      const std::string& category = "all") {
  ConformanceArch arch = conformance_arch(dir);
  analysis::PrepareOptions o;
  o.platform = arch.platform;
  o.arch = arch.arch;
  o.trace_path = "trace.json.gz";
  o.output_dir = out;
  o.category = category;
  analysis::PrepareInputs inputs;
  inputs.multi_kernel_data =
      analysis::read_json_file(dir + "/category_data/multi_kernel_data.json");
  inputs.fusion_candidates =
      analysis::read_json_file(dir + "/category_data/fusion_candidates.json");
  return analysis::prepare_category_data(analysis::read_perf_report_csvs(dir + "/perf_report_csvs"),
                                         o, inputs);
}

// Maps "<tmp>/x" to "x" and "." to the temp dir name, so recorded paths compare.
inline std::function<std::string(const std::string&)> path_normalizer(const std::string& tmp) {
  return [tmp](const std::string& s) {
    if (s == tmp || s == ".") return std::string("<out>");
    if (s.starts_with(tmp + "/")) return s.substr(tmp.size() + 1);
    auto pos = s.find(tmp + "/");
    if (pos != std::string::npos) return s.substr(0, pos) + s.substr(pos + tmp.size() + 1);
    return s;
  };
}

}  // namespace jarvis::testing
