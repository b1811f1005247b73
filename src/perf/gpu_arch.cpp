// GPU arch loading and the roofline formula.
#include "perf/gpu_arch.h"

#include <algorithm>
#include <cctype>
#include <cmath>
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

std::string bundled_arch_dir() {
  if (const char* env = std::getenv("JARVIS_ARCH_DIR"); env && *env) return env;
  return std::string(JARVIS_SOURCE_DIR) + "/arch";
}

std::vector<std::string> bundled_gpu_arch_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(bundled_arch_dir(), ec)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
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

}  // namespace

GpuArch load_gpu_arch(const std::string& name_or_path) {
  if (name_or_path.empty()) throw GpuArchError("empty GPU arch name");
  for (const std::string& known : bundled_gpu_arch_names()) {
    if (upper(known) == upper(name_or_path)) {
      fs::path p = fs::path(bundled_arch_dir()) / (known + ".json");
      return parse_gpu_arch(read_file(p), p.string());
    }
  }
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec))
    return parse_gpu_arch(read_file(name_or_path), name_or_path);
  std::string known;
  for (const std::string& n : bundled_gpu_arch_names()) known += (known.empty() ? "" : ", ") + n;
  throw GpuArchError("unknown GPU arch '" + name_or_path + "': not a bundled arch (" +
                     (known.empty() ? std::string("none found in ") + bundled_arch_dir() : known) +
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
