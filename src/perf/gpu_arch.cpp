// GPU arch loading and the roofline formula.
#include "perf/gpu_arch.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace jarvis {

std::optional<double> GpuArch::peak_tflops(const std::string& compute_spec) const {
  auto it = max_achievable_tflops.find(compute_spec);
  if (it == max_achievable_tflops.end()) return std::nullopt;
  return it->second;
}

std::optional<double> GpuArch::ridge_point(const std::string& compute_spec) const {
  auto peak = peak_tflops(compute_spec);
  if (!peak || mem_bw_gbps <= 0) return std::nullopt;
  return (*peak * 1e12) / (mem_bw_gbps * 1e9);
}

}  // namespace jarvis

namespace jarvis::perf {

namespace fs = std::filesystem;

namespace {

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw GpuArchError("cannot read GPU arch file " + p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string arch_dir_from_env() {
  const char* env = std::getenv("JARVIS_ARCH_DIR");
  return env && *env ? env : "";
}

std::string stem(const std::string& file_name) {
  return file_name.substr(0, file_name.size() - std::string(".json").size());
}

}  // namespace

std::vector<std::string> bundled_gpu_arch_names() {
  std::vector<std::string> names;
  for (const auto& f : embedded_arch_files()) names.push_back(stem(f.path));
  if (std::string dir = arch_dir_from_env(); !dir.empty()) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  // One spelling per name (the env dir may repeat an embedded one).
  names.erase(
      std::unique(names.begin(), names.end(),
                  [](const std::string& a, const std::string& b) { return upper(a) == upper(b); }),
      names.end());
  return names;
}

std::optional<BundledArchText> bundled_arch_text(const std::string& name) {
  if (std::string dir = arch_dir_from_env(); !dir.empty()) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.path().extension() == ".json" && upper(entry.path().stem().string()) == upper(name))
        return BundledArchText{entry.path().stem().string(), read_file(entry.path()),
                               entry.path().string()};
  }
  for (const auto& f : embedded_arch_files())
    if (upper(stem(f.path)) == upper(name))
      return BundledArchText{stem(f.path), f.content, "bundled:" + stem(f.path)};
  return std::nullopt;
}

std::string bundled_arch_for_file(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return "";
  std::string text;
  try {
    text = read_file(path);
  } catch (const GpuArchError&) {
    return "";
  }
  for (const std::string& name : bundled_gpu_arch_names()) {
    auto bundled = bundled_arch_text(name);
    if (bundled && bundled->json == text) return bundled->name;
  }
  return "";
}

GpuArch parse_gpu_arch(const std::string& json_text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const std::exception& e) {
    throw GpuArchError("GPU arch file " + origin + " is not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw GpuArchError("GPU arch file " + origin + " must hold a JSON object");
  GpuArch arch;
  arch.path = origin;
  if (j.contains("name") && j["name"].is_string()) arch.name = j["name"].get<std::string>();
  auto number = [&](const char* key, double& out) {
    if (!j.contains(key)) return;
    if (!j[key].is_number())
      throw GpuArchError("GPU arch file " + origin + ": '" + key + "' must be a number");
    out = j[key].get<double>();
  };
  number("mem_bw_gbps", arch.mem_bw_gbps);
  number("memory_gb", arch.memory_gb);
  if (j.contains("max_achievable_tflops")) {
    const auto& m = j["max_achievable_tflops"];
    if (!m.is_object())
      throw GpuArchError("GPU arch file " + origin + ": 'max_achievable_tflops' must be an object");
    for (const auto& [k, v] : m.items()) {
      if (!v.is_number())
        throw GpuArchError("GPU arch file " + origin + ": max_achievable_tflops." + k +
                           " must be a number");
      arch.max_achievable_tflops[k] = v.get<double>();
    }
  }
  if (j.contains("_source") && j["_source"].is_string())
    arch.source = j["_source"].get<std::string>();
  return arch;
}

GpuArch load_gpu_arch(const std::string& name_or_path) {
  if (name_or_path.empty()) throw GpuArchError("empty GPU arch name");
  if (auto bundled = bundled_arch_text(name_or_path))
    return parse_gpu_arch(bundled->json, bundled->origin);
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec))
    return parse_gpu_arch(read_file(name_or_path), name_or_path);
  std::string known;
  for (const std::string& n : bundled_gpu_arch_names()) known += (known.empty() ? "" : ", ") + n;
  throw GpuArchError("unknown GPU arch '" + name_or_path + "': not a bundled arch (" + known +
                     ") and not an existing file");
}

std::optional<Roofline> compute_roofline(const GpuArch& arch, const std::string& compute_spec,
                                         double gflops, std::optional<double> bytes,
                                         double kernel_time_us) {
  auto peak = arch.peak_tflops(compute_spec);
  // TraceLens skips the roofline when the arch has no bandwidth (mem_bw_gbps absent).
  if (!peak || !bytes || !(gflops > 0) || !(arch.mem_bw_gbps > 0)) return std::nullopt;
  Roofline r;
  r.compute_time_us = (gflops * 1e9 / (*peak * 1e12)) * 1e6;
  r.memory_time_us = (*bytes / (arch.mem_bw_gbps * 1e9)) * 1e6;
  r.time_us = std::max(r.compute_time_us, r.memory_time_us);
  r.bound = r.compute_time_us >= r.memory_time_us ? "COMPUTE_BOUND" : "MEMORY_BOUND";
  r.pct = kernel_time_us > 0 ? (r.time_us / kernel_time_us) * 100 : NAN;
  return r;
}

}  // namespace jarvis::perf
