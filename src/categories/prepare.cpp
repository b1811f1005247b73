#include "categories/prepare.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "categories/category_analysis.h"
#include "categories/category_analysis_common.h"
#include "perf/gpu_arch.h"
#include "pycompat/json.h"
#include "pycompat/numeric.h"
#include "report/report.h"

namespace jarvis::analysis {

namespace fs = std::filesystem;

namespace {

constexpr const char* kTimeNote =
    "Use gpu_kernel_time_ms for bottleneck prioritization. cpu_duration_ms includes sync/launch "
    "overhead.";
constexpr const char* kBreakdownNote =
    "Use gpu_kernel_time_ms for bottleneck prioritization. sync_time_ms indicates host-device "
    "sync overhead.";

const Table& require_table(const TableRefs& tables, const std::string& name) {
  auto it = tables.find(name);
  if (it == tables.end())
    throw std::invalid_argument("perf report has no '" + name + "' sheet (needed by prepare)");
  return *it->second;
}

ojson base_metadata(const PrepareOptions& o, const ojson& gpu_util, const std::string& display,
                    const std::string& key) {
  ojson m = ojson::object();
  m["platform"] = o.platform;
  m["peak_hbm_bw_tbs"] = o.arch.at("mem_bw_gbps").get<double>() / 1000.0;
  m["max_achievable_tflops"] = o.arch.at("max_achievable_tflops");
  m["memory_gb"] = o.arch.at("memory_gb");
  m["trace_path"] = o.trace_path;
  m["output_dir"] = o.output_dir;
  m["category"] = display;
  m["category_name"] = key;
  m["gpu_utilization"] = gpu_util;
  return m;
}

struct CategoryRows {
  std::string key;
  std::string display;
  std::vector<size_t> rows;
};

std::vector<CategoryRows> split_categories(const Table& typed) {
  std::vector<CategoryRows> cats;
  for (size_t r = 0; r < typed.rows.size(); ++r) {
    auto [key, display] = normalize_category(cell_at(typed, r, "op category"));
    // Captured through an init-capture: clang 14 cannot capture a structured binding.
    auto it =
        std::find_if(cats.begin(), cats.end(), [&k = key](const auto& c) { return c.key == k; });
    if (it == cats.end()) {
      cats.push_back({key, display, {}});
      it = cats.end() - 1;
    }
    it->rows.push_back(r);
  }
  return cats;
}

// Step 5.5 numbers for one category's rows of the typed unified table.
ojson time_breakdown(const Table& typed, const std::vector<size_t>& rows) {
  bool has_kernel = typed.col(kKernelSum) >= 0;
  bool has_duration = typed.col("total_duration_us") >= 0;
  std::vector<double> kernel, duration;
  for (size_t r : rows) {
    kernel.push_back(cell_number(cell_at(typed, r, kKernelSum)));
    duration.push_back(cell_number(cell_at(typed, r, "total_duration_us")));
  }
  ojson gpu_ms = has_kernel ? ojson(pycompat::pandas_series_sum(kernel) / 1000.0) : ojson(0);
  ojson cpu_ms = has_duration ? ojson(pycompat::pandas_series_sum(duration) / 1000.0) : gpu_ms;
  double sync_ms = 0;
  bool sync_is_float = false;
  int64_t sync_count = 0;
  if (has_kernel && has_duration) {
    for (size_t k = 0; k < rows.size(); ++k) {
      // `x or 0` keeps NaN (truthy), so NaN rows never qualify.
      double kus = kernel[k], dus = duration[k];
      if (kus > 0 && dus > kus * 5) {
        sync_ms += (dus - kus) / 1000.0;
        sync_is_float = true;
        ++sync_count;
      }
    }
  }
  ojson t = ojson::object();
  // Column sums are numpy scalars: numpy rounding. The sync sum is a Python float.
  t["gpu_kernel_time_ms"] =
      gpu_ms.is_number_float() ? ojson(pycompat::numpy_round(gpu_ms.get<double>(), 3)) : gpu_ms;
  t["cpu_duration_ms"] =
      cpu_ms.is_number_float() ? ojson(pycompat::numpy_round(cpu_ms.get<double>(), 3)) : cpu_ms;
  t["sync_time_ms"] = sync_is_float ? ojson(pycompat::python_round(sync_ms, 3)) : ojson(0);
  t["sync_ops_count"] = sync_count;
  double gpu = gpu_ms.get<double>();
  t["has_sync_bottleneck"] = sync_ms > 0.1 * gpu && sync_ms > 1;
  return t;
}

void add_breakdown(ojson& entry, const ojson& breakdown) {
  for (const auto& [k, v] : breakdown.items()) entry[k] = v;
}

// The user's own description of the model: the one file of the output
// directory prepare reads back (an agent or person fills it in once; a new
// preparation keeps what they wrote and adds the keys still missing).
std::optional<ojson> user_model_info(const std::string& path) {
  if (!fs::exists(path)) return std::nullopt;
  try {
    return read_json_file(path);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// A preparation rewrites the inputs of the analyses, so their earlier results
// no longer describe them: the metrics of every category being prepared and
// of the system analyses (their inputs -- gpu_timeline, multi_kernel_data,
// fusion_candidates -- are rewritten by every preparation) are removed, and a
// trace-derived input this preparation has no value for is not left behind.
// Without this, kernel_fusion_metrics.json left by an earlier run would flag
// the compute categories' operations of the next one (TraceLens reuses such
// files; docs/deviations.md).
void remove_stale_outputs(const std::string& out, const std::string& category,
                          const PrepareInputs& inputs) {
  std::error_code ec;
  if (category == "all") {
    clear_analysis_results(out);  // also those of categories this trace lacks
  } else {
    for (const char* name :
         {category.c_str(), "cpu_idle", "multi_kernel", "kernel_fusion", "moe_fused"})
      fs::remove(fs::path(out) / "category_data" / (std::string(name) + "_metrics.json"), ec);
  }
  if (!inputs.multi_kernel_data)
    fs::remove(fs::path(out) / "category_data" / "multi_kernel_data.json", ec);
  if (!inputs.fusion_candidates)
    fs::remove(fs::path(out) / "category_data" / "fusion_candidates.json", ec);
}

bool has_multi_kernel_events(const ojson& mk) {
  auto count = [&](const char* section) -> double {
    if (!mk.is_object() || !mk.contains(section) || !mk[section].is_object()) return 0;
    const auto& s = mk[section];
    return s.contains("total_count") && s["total_count"].is_number()
               ? s["total_count"].get<double>()
               : 0;
  };
  return count("memcpy_summary") > 0 || count("nccl_summary") > 0;
}

}  // namespace

// The output directory joined as TraceLens's manifests show it: "." adds no
// prefix (its reference run with --output-dir . records "category_data/..."),
// and "out/" gets no doubled separator (os.path.join).
std::string recorded_path(const std::string& output_dir, const std::string& relative) {
  if (output_dir.empty() || output_dir == ".") return relative;
  return output_dir.back() == '/' ? output_dir + relative : output_dir + "/" + relative;
}

std::string skill_for_category(const std::string& key) {
  static const std::map<std::string, std::string> kSkills = {
      {"cpu_idle", "cpu-idle-analyzer"},
      {"gemm", "gemm-analyzer"},
      {"groupedgemm_fwd", "gemm-analyzer"},
      {"groupedgemm_bwd", "gemm-analyzer"},
      {"moe_fused", "moe-analyzer"},
      {"moe_unfused", "moe-analyzer"},
      {"sdpa_fwd", "sdpa-analyzer"},
      {"sdpa_bwd", "sdpa-analyzer"},
      {"inferenceattention", "sdpa-analyzer"},
      {"elementwise", "elementwise-analyzer"},
      {"reduce", "reduce-analyzer"},
      {"triton", "triton-analyzer"},
      {"norm", "norm-analyzer"},
      {"norm_fwd", "norm-analyzer"},
      {"norm_bwd", "norm-analyzer"},
      {"rmsnorm", "norm-analyzer"},
      {"convolution", "convolution-analyzer"},
      {"conv_fwd", "convolution-analyzer"},
      {"conv_bwd", "convolution-analyzer"},
  };
  auto it = kSkills.find(key);
  return it == kSkills.end() ? "generic-op-analyzer" : it->second;
}

std::map<std::string, double> direct_kernel_time_ms_by_key(const Table& by_category) {
  std::map<std::string, double> out;
  int ms = by_category.col("total_direct_kernel_time_ms");
  if (ms < 0) return out;
  for (size_t r = 0; r < by_category.rows.size(); ++r)
    out[normalize_category(cell_at(by_category, r, "op category")).first] +=
        by_category.rows[r][static_cast<size_t>(ms)].number();
  return out;
}

const std::vector<std::pair<std::string_view, std::string_view>>& skill_prompt_names() {
  static const std::vector<std::pair<std::string_view, std::string_view>> kNames = {
      {"convolution-analyzer", "convolution-analysis"},
      {"cpu-idle-analyzer", "cpu-idle-analysis"},
      {"elementwise-analyzer", "elementwise-analysis"},
      {"gemm-analyzer", "gemm-analysis"},
      {"generic-op-analyzer", "other-analysis"},
      {"kernel-fusion-analyzer", "kernel-fusion-analysis"},
      {"moe-analyzer", "moe-analysis"},
      {"multi-kernel-analyzer", "multi-kernel-analysis"},
      {"norm-analyzer", "norm-analysis"},
      {"reduce-analyzer", "reduce-analysis"},
      {"sdpa-analyzer", "sdpa-analysis"},
      {"triton-analyzer", "triton-analysis"},
  };
  return kNames;
}

std::string prompt_for_category(const std::string& key, std::string_view tracelens_skill) {
  if (key == "multi_tensor_apply") return "optimizer-analysis";
  return prompt_for_skill(tracelens_skill);
}

std::string prompt_for_skill(std::string_view tracelens_skill) {
  for (const auto& [tracelens, served] : skill_prompt_names())
    if (tracelens == tracelens_skill) return std::string(served);
  return {};
}

ojson gpu_utilization_from_timeline(const Table& gpu_timeline) {
  Table typed = pandas_roundtrip(gpu_timeline);
  std::map<std::string, std::pair<ojson, ojson>> by_type;
  for (size_t r = 0; r < typed.rows.size(); ++r) {
    const Cell* type = cell_at(typed, r, "type");
    const Cell* ms = cell_at(typed, r, "time ms");
    const Cell* pct = cell_at(typed, r, "percent");
    if (!type || !ms || !pct) continue;
    std::string name = type->is_text() ? type->text() : type->to_csv_text(false);
    by_type[name] = {cell_to_json(*ms), cell_to_json(*pct)};
  }
  auto pick = [&](const char* type, bool time) -> ojson {
    auto it = by_type.find(type);
    if (it == by_type.end()) return 0;
    return time ? it->second.first : it->second.second;
  };
  ojson g = ojson::object();
  g["total_time_ms"] = pick("total_time", true);
  g["computation_time_percent"] = pick("computation_time", false);
  g["exposed_comm_time_percent"] = pick("exposed_comm_time", false);
  g["exposed_memcpy_time_percent"] = pick("exposed_memcpy_time", false);
  g["idle_time_percent"] = pick("idle_time", false);
  return g;
}

std::map<std::string, Table> read_perf_report_csvs(const std::string& dir) {
  std::map<std::string, Table> tables;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw std::runtime_error("[DIAG:pipeline:STEP1_FAIL] Perf report CSVs missing at " + dir);
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".csv") continue;
    std::string stem = entry.path().stem().string();
    tables[stem] = read_csv_file(entry.path().string());
    tables[stem].name = stem;
  }
  if (tables.empty())
    throw std::runtime_error("[DIAG:pipeline:STEP1_FAIL] Perf report CSVs missing at " + dir);
  return tables;
}

ojson load_arch_json(const std::string& name_or_path) {
  auto check = [](ojson arch, const std::string& origin) {
    for (const char* key : {"mem_bw_gbps", "memory_gb", "max_achievable_tflops"})
      if (!arch.contains(key))
        throw std::invalid_argument(origin + ": arch file lacks '" + key + "'");
    return arch;
  };
  bool is_path = name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
  // The bundled arch files (case-insensitive names), read as ordered JSON so
  // metadata keeps the file's key order and int/float spelling.
  if (!is_path)
    if (auto bundled = perf::bundled_arch_text(name_or_path)) {
      ojson arch;
      try {
        arch = ojson::parse(bundled->json);
      } catch (const std::exception& e) {
        throw std::invalid_argument(bundled->origin + ": not valid JSON: " + e.what());
      }
      return check(std::move(arch), bundled->origin);
    }
  if (fs::is_regular_file(name_or_path)) return check(read_json_file(name_or_path), name_or_path);
  std::string known;
  for (const auto& n : perf::bundled_gpu_arch_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown platform '" + name_or_path +
                              "': no such arch JSON file and not a bundled arch (" + known +
                              "; $JARVIS_ARCH_DIR adds <name>.json files)");
}

PrepareResult prepare_category_data(const std::map<std::string, Table>& perf_tables,
                                    const PrepareOptions& o, const PrepareInputs& inputs) {
  TableRefs refs;
  for (const auto& [name, table] : perf_tables) refs.emplace(name, &table);
  return prepare_category_data(refs, o, inputs);
}

PrepareResult prepare_category_data(const TableRefs& perf_tables, const PrepareOptions& o,
                                    const PrepareInputs& inputs) {
  for (const char* key : {"mem_bw_gbps", "memory_gb", "max_achievable_tflops"})
    if (!o.arch.is_object() || !o.arch.contains(key))
      throw std::invalid_argument(std::string("arch description lacks '") + key + "'");
  if (o.output_dir.empty()) throw std::invalid_argument("output directory is empty");
  // Prepare reads back and rewrites files of its output directory: writers of
  // the same directory take turns.
  auto dir_lock = lock_output_dir(o.output_dir);
  if (o.category != "all" && !is_valid_category_name(o.category))
    throw std::invalid_argument("bad category name '" + o.category + "'");

  const Table& timeline = require_table(perf_tables, "gpu_timeline");
  const Table& unified_in = require_table(perf_tables, "unified_perf_summary");
  Table unified = pandas_roundtrip(unified_in);
  std::vector<CategoryRows> cats = split_categories(unified);

  bool special = o.category == "all" || o.category == "cpu_idle" || o.category == "multi_kernel" ||
                 o.category == "kernel_fusion";
  if (!special &&
      std::none_of(cats.begin(), cats.end(), [&](const auto& c) { return c.key == o.category; })) {
    std::string names;
    for (const auto& c : cats) names += (names.empty() ? "" : ", ") + c.key;
    throw std::invalid_argument("category '" + o.category + "' not in this trace (available: " +
                                names + ", cpu_idle, multi_kernel, kernel_fusion, all)");
  }
  auto wanted = [&](const std::string& key) { return o.category == "all" || o.category == key; };

  PrepareResult result;
  const std::string& out = o.output_dir;
  // The files are written as one set (write_files_atomic: their fsyncs run
  // at once, each directory is synced once) when the set is complete, or
  // before something reads the directory back.
  std::vector<std::pair<std::string, std::string>> pending;
  auto write_text = [&](const std::string& rel, const std::string& data) {
    pending.emplace_back(out + "/" + rel, data);
    result.files.push_back(out + "/" + rel);
  };
  auto flush = [&] {
    write_files_atomic(pending);
    pending.clear();
  };
  auto write_json = [&](const std::string& rel, const ojson& data) {
    write_text(rel, pycompat::py_json_dumps(data));
  };
  for (const char* d : {"metadata", "category_data", "category_findings", "system_findings"})
    fs::create_directories(fs::path(out) / d);
  remove_stale_outputs(out, o.category, inputs);

  if (o.write_perf_report_csvs) {
    std::vector<std::string> written;
    for (const auto& [name, table] : perf_tables) {
      write_text("perf_report_csvs/" + name + ".csv", table->to_csv());
      written.push_back(name + ".csv");
    }
    flush();  // the CSVs before the marker that lists them
    record_report_files(out + "/perf_report_csvs", written);
  }

  ojson gpu_util = gpu_utilization_from_timeline(timeline);
  result.gpu_utilization = gpu_util;

  // Step 4.5 / 4b outputs (trace-derived), only from this preparation's inputs.
  const std::optional<ojson>& mk = inputs.multi_kernel_data;
  if (mk) write_json("category_data/multi_kernel_data.json", *mk);
  const std::optional<ojson>& fusion = inputs.fusion_candidates;
  if (fusion) write_json("category_data/fusion_candidates.json", *fusion);

  // Step 5: per-category CSV + metadata.
  ojson entries = ojson::array();
  Table csv_shape(unified.name, unified.columns);
  csv_shape.columns.push_back("enhanced_category");
  csv_shape.columns.push_back("display_name");
  for (const auto& cat : cats) {
    std::string csv_rel = "category_data/" + cat.key + "_ops.csv";
    std::string meta_rel = "metadata/" + cat.key + "_metadata.json";
    ojson breakdown = time_breakdown(unified, cat.rows);
    if (wanted(cat.key)) {
      Table part = csv_shape;
      for (size_t r : cat.rows) {
        // Typed cells, so floats are re-written the way pandas writes the
        // values it parsed (repr of the parsed double).
        auto row = unified.rows[r];
        row.resize(unified.columns.size());
        row.emplace_back(cat.key);
        row.emplace_back(cat.display);
        part.rows.push_back(std::move(row));
      }
      write_text(csv_rel, part.to_csv());
      ojson meta = base_metadata(o, gpu_util, cat.display, cat.key);
      meta["trace_loading_policy"] = "DO_NOT_LOAD_TRACE_use_precomputed_tree_data";
      ojson tb = breakdown;
      tb["note"] = kBreakdownNote;
      meta["time_breakdown"] = tb;
      write_json(meta_rel, meta);
      auto tree = inputs.tree_data.find(cat.key);
      if (tree != inputs.tree_data.end())
        write_json("category_data/" + cat.key + "_tree_data.json", tree->second);
    }
    ojson e = ojson::object();
    e["name"] = cat.key;
    e["display_name"] = cat.display;
    e["skill"] = skill_for_category(cat.key);
    e["tier"] = "compute_kernel";
    e["ops_count"] = cat.rows.size();
    e["csv_file"] = recorded_path(out, csv_rel);
    e["metadata_file"] = recorded_path(out, meta_rel);
    add_breakdown(e, breakdown);
    entries.push_back(e);
    result.categories.push_back(cat.key);
  }

  // CPU/idle: always present.
  write_json("metadata/cpu_idle_metadata.json",
             base_metadata(o, gpu_util, "CPU/Idle Analysis", "cpu_idle"));
  write_text("category_data/cpu_idle_ops.csv", "\n");
  ojson idle = ojson::object();
  idle["name"] = "cpu_idle";
  idle["display_name"] = "CPU/Idle Analysis";
  idle["skill"] = "cpu-idle-analyzer";
  idle["tier"] = "system";
  idle["ops_count"] = 0;
  idle["csv_file"] = recorded_path(out, "category_data/cpu_idle_ops.csv");
  idle["metadata_file"] = recorded_path(out, "metadata/cpu_idle_metadata.json");
  idle["priority"] = 0;
  entries.insert(entries.begin(), idle);

  if (mk && has_multi_kernel_events(*mk)) {
    ojson meta = base_metadata(o, gpu_util, "Multi-Kernel Issues", "multi_kernel");
    meta["tier"] = "system";
    write_json("metadata/multi_kernel_metadata.json", meta);
    ojson e = ojson::object();
    e["name"] = "multi_kernel";
    e["display_name"] = "Multi-Kernel Issues";
    e["skill"] = "multi-kernel-analyzer";
    e["tier"] = "system";
    e["ops_count"] = 0;
    e["csv_file"] = nullptr;
    e["metadata_file"] = recorded_path(out, "metadata/multi_kernel_metadata.json");
    e["data_file"] = recorded_path(out, "category_data/multi_kernel_data.json");
    entries.push_back(e);
  }
  if (fusion && fusion->is_array() && !fusion->empty()) {
    ojson e = ojson::object();
    e["name"] = "kernel_fusion";
    e["display_name"] = "Kernel Fusion Opportunities";
    e["skill"] = "kernel-fusion-analyzer";
    e["tier"] = "system";
    e["ops_count"] = fusion->size();
    e["csv_file"] = nullptr;
    e["metadata_file"] = nullptr;
    e["data_file"] = recorded_path(out, "category_data/fusion_candidates.json");
    // TraceLens gives the system kernel_fusion entry an (empty) time breakdown too.
    add_breakdown(e, time_breakdown(unified, {}));
    entries.push_back(e);
  }

  ojson manifest = ojson::object();
  manifest["platform"] = o.platform;
  manifest["trace_path"] = o.trace_path;
  manifest["output_dir"] = o.output_dir;
  manifest["comparison_scope"] = "standalone";
  manifest["gpu_utilization"] = gpu_util;
  manifest["categories"] = entries;
  manifest["time_metric_note"] = kTimeNote;
  write_json("category_data/category_manifest.json", manifest);
  result.manifest = manifest;

  ojson model_info = {{"model", "Cannot be inferred from trace"},
                      {"architecture", "Cannot be inferred from trace"},
                      {"scale", "Cannot be inferred from trace"},
                      {"precision", "Cannot be inferred from trace"}};
  if (auto existing = user_model_info(out + "/metadata/model_info.json");
      existing && existing->is_object())
    for (const auto& [k, v] : existing->items()) model_info[k] = v;
  write_json("metadata/model_info.json", model_info);
  flush();
  return result;
}

}  // namespace jarvis::analysis
