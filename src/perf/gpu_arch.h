// GPU architecture specs for roofline analysis (spec perf-models.md §7), in
// TraceLens's arch JSON schema: name, mem_bw_gbps, memory_gb and
// max_achievable_tflops keyed by Compute Spec ("matrix_bf16", ...).
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/error.h"

namespace jarvis {

// Declared in namespace jarvis (report/report.h forward-declares it there for
// ReportOptions); also visible as jarvis::perf::GpuArch.
struct GpuArch {
  std::string name;
  double mem_bw_gbps = 0;  // GB/s (decimal)
  double memory_gb = 0;
  std::map<std::string, double> max_achievable_tflops;  // by Compute Spec
  std::string source;  // the `_source` note of bundled files ("" otherwise)
  std::string path;    // file it was read from

  // Peak TFLOPS for a Compute Spec, when the arch lists it.
  std::optional<double> peak_tflops(const std::string& compute_spec) const;
  // FLOPs per byte where compute and memory time are equal, for a spec.
  std::optional<double> ridge_point(const std::string& compute_spec) const;
};

}  // namespace jarvis

namespace jarvis::perf {

using jarvis::GpuArch;

class GpuArchError : public ErrorOf<ErrorKind::InvalidInput> {
 public:
  using ErrorOf::ErrorOf;
};

// Loads a bundled arch by name (case-insensitive: "mi300x", "H100") or any
// arch JSON file by path. Bundled archs are the repository's arch/*.json,
// compiled into the binary; $JARVIS_ARCH_DIR/<NAME>.json, when present, takes
// precedence (a site's own specs). Throws GpuArchError naming the known archs
// when neither resolves, or describing a bad file.
GpuArch load_gpu_arch(const std::string& name_or_path);
// Parses arch JSON text (`origin` is used in error messages).
GpuArch parse_gpu_arch(const std::string& json_text, const std::string& origin);
// Names of the bundled archs (without .json), sorted: the embedded ones and
// those of $JARVIS_ARCH_DIR.
std::vector<std::string> bundled_gpu_arch_names();

struct BundledArchText {
  std::string name;    // in its file's case ("MI300X")
  std::string json;    // the file's text
  std::string origin;  // "$JARVIS_ARCH_DIR/H100.json" or "bundled:H100"
};
// The text of a bundled arch by case-insensitive name, or nullopt.
std::optional<BundledArchText> bundled_arch_text(const std::string& name);

// The bundled arch whose text equals this file's, or "" (so that a path to a
// copy of arch/H100.json and the name "H100" share one cache key).
std::string bundled_arch_for_file(const std::string& path);

// arch/*.json compiled in by cmake/arch.cmake.
struct EmbeddedArchFile {
  const char* path;  // "H100.json"
  const char* content;
};
const std::vector<EmbeddedArchFile>& embedded_arch_files();

// Roofline columns (§7.2): only when the arch lists the Compute Spec, bytes
// are known and GFLOPS > 0.
struct Roofline {
  double time_us = 0;
  std::string bound;  // "COMPUTE_BOUND" / "MEMORY_BOUND"
  double pct = 0;     // Roofline Time / Kernel Time · 100 (NaN when kernel time is 0)
  double compute_time_us = 0;
  double memory_time_us = 0;
};
std::optional<Roofline> compute_roofline(const GpuArch& arch, const std::string& compute_spec,
                                         double gflops, std::optional<double> bytes,
                                         double kernel_time_us);

}  // namespace jarvis::perf
