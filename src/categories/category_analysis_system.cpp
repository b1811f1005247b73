// System-tier analyses: cpu_idle, multi_kernel, kernel_fusion (TraceLens
// cpu_idle_analysis.py, multi_kernel_analysis.py, kernel_fusion_analysis.py).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "categories/category_analysis_common.h"
#include "categories/category_analysis_internal.h"
#include "categories/kernel_details_text.h"
#include "categories/prepare.h"
#include "pycompat/json.h"
#include "pycompat/numeric.h"
#include "pycompat/text.h"

namespace jarvis::analysis::detail {

namespace fs = std::filesystem;

namespace {

constexpr const char* kKernelMean = "Kernel Time (\xC2\xB5s)_mean";
constexpr double kTargetHigh = 100.0, kTargetMid = 87.5, kTargetLow = 75.0;

double num(const ojson& obj, const char* key, double fallback = 0) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_number()) return fallback;
  return obj[key].get<double>();
}

ojson value_or(const ojson& obj, const char* key, ojson fallback) {
  if (!obj.is_object() || !obj.contains(key)) return fallback;
  return obj[key];
}

// gpu_timeline rows: type -> (time ms, percent) as JSON numbers.
std::map<std::string, std::pair<ojson, ojson>> read_timeline(const std::string& path) {
  Table t = read_csv_typed(path);
  std::map<std::string, std::pair<ojson, ojson>> out;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const Cell* type = cell_at(t, r, "type");
    if (!type || is_na(*type)) continue;
    const Cell* ms = cell_at(t, r, "time ms");
    const Cell* pct = cell_at(t, r, "percent");
    out[type->to_csv_text(false)] = {ms ? cell_to_json(*ms) : ojson(0),
                                     pct ? cell_to_json(*pct) : ojson(0)};
  }
  return out;
}

}  // namespace

std::string fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

std::string perf_csv_dir(const std::string& output_dir) {
  return output_dir + "/perf_report_csvs";
}

// ------------------------------------------------------------- cpu_idle

ojson cpu_idle_metrics(const std::string& output_dir) {
  std::string timeline_path = perf_csv_dir(output_dir) + "/gpu_timeline.csv";
  if (!fs::exists(timeline_path))
    return {{"status", "ERROR"}, {"error", "GPU timeline not found: " + timeline_path}};
  auto tl = read_timeline(timeline_path);
  auto get = [&](const char* type, bool time) -> ojson {
    auto it = tl.find(type);
    if (it == tl.end()) return 0;
    return time ? it->second.first : it->second.second;
  };

  ojson patterns = {{"short_kernel_count", 0},
                    {"total_kernel_count", 0},
                    {"avg_kernel_time_us", 0},
                    {"kernel_count_by_category", ojson::object()}};
  std::string ops_path = perf_csv_dir(output_dir) + "/ops_summary.csv";
  if (fs::exists(ops_path)) {
    Table ops = read_csv_typed(ops_path);
    if (!ops.rows.empty() && ops.col(kKernelSum) >= 0 && ops.col("Count") >= 0) {
      int64_t total =
          static_cast<int64_t>(pycompat::pandas_series_sum(column_numbers(ops, "Count")));
      patterns["total_kernel_count"] = total;
      double total_time = pycompat::pandas_series_sum(column_numbers(ops, kKernelSum));
      if (total > 0) patterns["avg_kernel_time_us"] = total_time / static_cast<double>(total);
      if (ops.col(kKernelMean) >= 0) {
        std::vector<double> short_counts;
        for (size_t r = 0; r < ops.rows.size(); ++r)
          if (cell_number(cell_at(ops, r, kKernelMean)) < 10)
            short_counts.push_back(cell_number(cell_at(ops, r, "Count")));
        patterns["short_kernel_count"] =
            short_counts.empty() ? 0
                                 : static_cast<int64_t>(pycompat::pandas_series_sum(short_counts));
      }
    }
    if (!ops.rows.empty() && ops.col("op category") >= 0 && ops.col("Count") >= 0) {
      std::map<std::string, std::vector<double>> by_cat;  // groupby sorts keys
      for (size_t r = 0; r < ops.rows.size(); ++r) {
        const Cell* c = cell_at(ops, r, "op category");
        if (!c || is_na(*c)) continue;
        by_cat[c->to_csv_text(false)].push_back(cell_number(cell_at(ops, r, "Count")));
      }
      ojson counts = ojson::object();
      for (const auto& [cat, v] : by_cat)
        counts[cat] = static_cast<int64_t>(pycompat::pandas_series_sum(v));
      patterns["kernel_count_by_category"] = counts;
    }
  }

  double idle_pct = get("idle_time", false).get<double>();
  ojson util = ojson::object();
  util["total_time_ms"] = pycompat::py_round_json(get("total_time", true), 3);
  util["idle_time_ms"] = pycompat::py_round_json(get("idle_time", true), 3);
  util["idle_time_percent"] = pycompat::py_round_json(get("idle_time", false), 2);
  util["computation_percent"] = pycompat::py_round_json(get("computation_time", false), 2);
  util["communication_percent"] = pycompat::py_round_json(get("exposed_comm_time", false), 2);
  util["memcpy_percent"] = pycompat::py_round_json(get("exposed_memcpy_time", false), 2);
  ojson m = ojson::object();
  m["status"] = "OK";
  m["idle_flagged"] = idle_pct > 15;
  m["gpu_utilization"] = util;
  m["kernel_analysis"] = patterns;
  m["impact_estimates"] = ojson::array();
  return m;
}

namespace {

std::string ref_text(const ojson& ref) {
  if (!ref.is_object()) return "-";
  std::string name = ref.value("name", "");
  constexpr size_t kMaxName = 60;  // kernel names run to hundreds of characters
  if (name.size() > kMaxName) name = name.substr(0, kMaxName) + "...";
  return name + " (uid " + ref["uid"].dump() + ")";
}

}  // namespace

std::string idle_markdown(const ojson& idle) {
  double idle_us = num(idle, "idle_us");
  std::string out = "- Kernels: " + idle["kernels"].dump() +
                    " (short < 10 us: " + idle["short_kernels"].dump() + ", " +
                    fixed(num(idle, "short_kernel_time_us") / 1000, 3) +
                    " ms), from the trace's kernel events\n";
  // Over every GPU event: kernels whose launch the trace did not record (before
  // its window, or unlinked) widen the span TraceLens's timeline measures.
  const std::string events = idle.contains("gpu_events")
                                 ? " over all " + idle["gpu_events"].dump() + " GPU events (" +
                                       idle["unlinked_gpu_events"].dump() +
                                       " not linked to a launch)"
                                 : "";
  out += "- Idle" + events + ": " + fixed(idle_us / 1000, 3) + " ms in " + idle["gaps"].dump() +
         " gaps; " + idle["long_gaps"].dump() + " gaps over 100 us hold " +
         fixed(num(idle, "long_gaps_us") / 1000, 3) + " ms\n";
  out += "\n## Where the GPU idled\n\nBy cause:\n";
  for (const auto& [cause, v] : idle["by_cause"].items()) {
    if (num(v, "gaps") == 0) continue;
    double us = num(v, "idle_us");
    out += "- " + cause + ": " + fixed(us / 1000, 3) + " ms (" +
           fixed(idle_us > 0 ? 100 * us / idle_us : 0, 1) + " %) in " + v["gaps"].dump() +
           " gaps\n";
  }
  out += "\nBy place (annotation or top-level op launching the work after the gap):\n";
  for (const auto& p : idle["by_place"])
    out += "- " + p.value("place", "") +
           (p["uid"].is_null() ? "" : " (uid " + p["uid"].dump() + ")") + ": " +
           fixed(num(p, "idle_us") / 1000, 3) + " ms in " + p["gaps"].dump() + " gaps\n";
  out +=
      "\nLargest gaps:\n\n| Gap (us) | Cause | Place | Before | After | Host event |\n"
      "|---|---|---|---|---|---|\n";
  for (const auto& g : idle["largest_gaps"])
    out += "| " + fixed(num(g, "dur_us"), 1) + " | " + g.value("cause", "") + " | " +
           ref_text(g["place"]) + " | " + ref_text(g["before"]) + " | " + ref_text(g["after"]) +
           " | " + ref_text(g["host_event"]) + " |\n";
  return out;
}

// --------------------------------------------------------- multi_kernel

namespace {

ojson memcpy_assessment(const ojson& memcpy, double total_time_ms) {
  double memcpy_ms = num(memcpy, "total_time_us") / 1000;
  if (total_time_ms <= 0) return {{"flagged", false}, {"details", "No timeline data available"}};
  double memcpy_pct = memcpy_ms / total_time_ms * 100;
  ojson issues = ojson::array();
  bool flagged = false;
  ojson by_dir = value_or(memcpy, "by_direction", ojson::object());
  for (const char* dir : {"D2H", "H2D"}) {
    ojson info = value_or(by_dir, dir, ojson::object());
    double count = num(info, "count");
    double dir_ms = num(info, "total_time_us") / 1000;
    double dir_pct = dir_ms / total_time_ms * 100;
    if (count == 0) continue;
    if (dir_pct > 5 || count > 10) {
      flagged = true;
      issues.push_back(
          {{"direction", dir},
           {"count", value_or(info, "count", 0)},
           {"time_ms", pycompat::python_round(dir_ms, 3)},
           {"percent_of_total", pycompat::python_round(dir_pct, 2)},
           {"avg_bytes", value_or(info, "avg_bytes", 0)},
           {"description",
            std::string(dir) + " memcpy: " + std::to_string(static_cast<int64_t>(count)) +
                " transfers, " + fixed(dir_ms, 3) + "ms (" + fixed(dir_pct, 2) + "% of total)"}});
    }
  }
  return {{"flagged", flagged},
          {"total_count", value_or(memcpy, "total_count", 0)},
          {"total_time_ms", pycompat::python_round(memcpy_ms, 3)},
          {"percent_of_total", pycompat::python_round(memcpy_pct, 2)},
          {"issues", issues}};
}

ojson nccl_assessment(const ojson& overlap) {
  double exposed_pct = num(overlap, "comm_percent_of_total");
  double total_us = num(overlap, "total_comm_time_us");
  double exposed_us = num(overlap, "exposed_comm_time_us");
  if (total_us == 0) return {{"flagged", false}, {"details", "No communication events detected"}};
  return {{"flagged", exposed_pct > 5},
          {"exposed_comm_time_ms", pycompat::python_round(exposed_us / 1000, 3)},
          {"total_comm_time_ms", pycompat::python_round(total_us / 1000, 3)},
          {"exposed_percent_of_total", pycompat::python_round(exposed_pct, 2)},
          {"description", "Exposed (non-overlapped) communication: " + fixed(exposed_pct, 1) +
                              "% of total GPU time"}};
}

ojson overlap_assessment(const ojson& overlap) {
  ojson ratio_j = value_or(overlap, "comm_overlap_ratio", nullptr);
  double total_us = num(overlap, "total_comm_time_us");
  if (ratio_j.is_null() || total_us < 100)
    return {{"flagged", false},
            {"details", "Insufficient communication data for overlap analysis"}};
  double ratio = ratio_j.get<double>();
  return {{"flagged", ratio < 0.7},
          {"overlap_ratio", pycompat::python_round(ratio, 4)},
          {"overlap_percent", pycompat::python_round(ratio * 100, 2)},
          {"target_percent", 70},
          {"description",
           "Compute/communication overlap: " + fixed(ratio * 100, 1) + "% (target > 70%)"}};
}

ojson cross_validate(const ojson& overlap,
                     const std::map<std::string, std::pair<ojson, ojson>>& tl) {
  ojson v = {{"status", "PASS"}, {"checks", ojson::array()}, {"warnings", ojson::array()}};
  const std::tuple<const char*, const char*, const char*> checks[] = {
      {"computation_time_us", "computation_time", "Computation time"},
      {"exposed_comm_time_us", "exposed_comm_time", "Exposed communication time"},
      {"exposed_memcpy_time_us", "exposed_memcpy_time", "Exposed memcpy time"},
      {"total_time_us", "total_time", "Total GPU time"}};
  for (const auto& [mk_key, tl_type, label] : checks) {
    double mk_ms = num(overlap, mk_key) / 1000;
    auto it = tl.find(tl_type);
    if (it == tl.end()) {
      v["checks"].push_back({{"metric", label},
                             {"status", "SKIP"},
                             {"reason", std::string(tl_type) + " not found in gpu_timeline.csv"}});
      continue;
    }
    double tl_ms = it->second.first.is_number() ? it->second.first.get<double>() : 0;
    if (tl_ms == 0 && mk_ms == 0) {
      v["checks"].push_back(
          {{"metric", label}, {"status", "PASS"}, {"mk_ms", 0}, {"tl_ms", 0}, {"diff_ms", 0}});
      continue;
    }
    double diff = std::fabs(mk_ms - tl_ms);
    double ref = std::max({mk_ms, tl_ms, 1e-6});
    double diff_pct = diff / ref * 100;
    ojson check = {{"metric", label},
                   {"mk_ms", pycompat::python_round(mk_ms, 3)},
                   {"tl_ms", pycompat::python_round(tl_ms, 3)},
                   {"diff_ms", pycompat::python_round(diff, 3)},
                   {"diff_pct", pycompat::python_round(diff_pct, 2)}};
    if (diff_pct <= 2.0) {
      check["status"] = "PASS";
    } else {
      check["status"] = "WARN";
      v["status"] = "WARN";
      v["warnings"].push_back(std::string(label) + ": multi_kernel_data=" + fixed(mk_ms, 3) +
                              "ms vs gpu_timeline=" + fixed(tl_ms, 3) + "ms (diff " +
                              fixed(diff_pct, 1) + "%)");
    }
    v["checks"].push_back(check);
  }
  return v;
}

}  // namespace

ojson multi_kernel_metrics(const std::string& output_dir) {
  std::string data_file = output_dir + "/category_data/multi_kernel_data.json";
  if (!fs::exists(data_file))
    return {{"status", "ERROR"},
            {"error", "multi_kernel_data.json not found - run orchestrator_prepare.py first"},
            {"memcpy_assessment", {{"flagged", false}}},
            {"nccl_blocking_assessment", {{"flagged", false}}},
            {"overlap_assessment", {{"flagged", false}}},
            {"patterns_detected", ojson::array()}};
  ojson mk = read_json_file(data_file);
  std::string tl_path = perf_csv_dir(output_dir) + "/gpu_timeline.csv";
  std::map<std::string, std::pair<ojson, ojson>> tl;
  bool have_tl = fs::exists(tl_path);
  ojson total_time_ms = 0;
  ojson overlap = value_or(mk, "overlap_analysis", ojson::object());
  if (have_tl) {
    tl = read_timeline(tl_path);
    if (auto it = tl.find("total_time"); it != tl.end()) total_time_ms = it->second.first;
  } else {
    total_time_ms = num(overlap, "total_time_us") / 1000;
  }
  double total_ms = total_time_ms.is_number() ? total_time_ms.get<double>() : 0;
  ojson memcpy = value_or(mk, "memcpy_summary", ojson::object());
  ojson nccl = value_or(mk, "nccl_summary", ojson::object());

  ojson mem_a = memcpy_assessment(memcpy, total_ms);
  ojson nccl_a = nccl_assessment(overlap);
  ojson over_a = overlap_assessment(overlap);
  ojson patterns = ojson::array();
  if (mem_a["flagged"].get<bool>())
    for (const auto& issue : mem_a["issues"])
      patterns.push_back(
          {{"pattern",
            "high_" + pycompat::ascii_lower(issue["direction"].get<std::string>()) + "_memcpy"},
           {"description", issue["description"]}});
  if (nccl_a["flagged"].get<bool>())
    patterns.push_back({{"pattern", "nccl_blocking_compute"},
                        {"description", value_or(nccl_a, "description", "")}});
  if (over_a["flagged"].get<bool>())
    patterns.push_back({{"pattern", "poor_comm_compute_overlap"},
                        {"description", value_or(over_a, "description", "")}});

  ojson m = ojson::object();
  m["status"] = "SUCCESS";
  m["total_time_ms"] = pycompat::py_round_json(total_time_ms, 3);
  m["memcpy_summary"] = {
      {"total_count", value_or(memcpy, "total_count", 0)},
      {"total_time_ms", pycompat::python_round(num(memcpy, "total_time_us") / 1000, 3)},
      {"by_direction", value_or(memcpy, "by_direction", ojson::object())}};
  m["nccl_summary"] = {
      {"total_count", value_or(nccl, "total_count", 0)},
      {"total_time_ms", pycompat::python_round(num(nccl, "total_time_us") / 1000, 3)},
      {"top_ops", value_or(nccl, "top_ops", ojson::array())}};
  m["overlap_analysis"] = overlap;
  m["memcpy_assessment"] = mem_a;
  m["nccl_blocking_assessment"] = nccl_a;
  m["overlap_assessment"] = over_a;
  m["patterns_detected"] = patterns;
  m["cross_validation"] = have_tl ? cross_validate(overlap, tl) : ojson(nullptr);
  m["impact_estimates"] = ojson::array();
  return m;
}

// -------------------------------------------------------- kernel_fusion

namespace {

constexpr size_t kMaxFusionKernels = 15;
constexpr double kMinFusionImpact = 2.0;
constexpr double kOverlapEfficiency = 0.85;

// Hashable form of parse_first_shape's tuple (or "None").
std::string first_shape_key(const PyValue* dims) {
  if (!dims || !dims->is_seq() || dims->list.empty() || !dims->list[0].is_seq()) return "None";
  PyValue t = dims->list[0];
  std::function<void(PyValue&)> tuplify = [&](PyValue& v) {
    if (v.is_seq()) {
      v.kind = PyValue::Kind::Tuple;
      for (auto& i : v.list) tuplify(i);
    }
  };
  tuplify(t);
  return t.repr();
}

std::string first_shape_key_text(const std::string& text) {
  auto v = try_parse_py_literal(text);
  return first_shape_key(v ? &*v : nullptr);
}

// kernel name -> [(shape key, perf entry)] in insertion order.
using PerfLookup = std::vector<std::pair<std::string, std::vector<std::pair<std::string, ojson>>>>;

PerfLookup build_perf_lookup(const Table& unified) {
  PerfLookup lookup;
  std::map<std::string, size_t> index;
  for (size_t r = 0; r < unified.rows.size(); ++r) {
    const Cell* kd = cell_at(unified, r, "kernel_details_summary");
    if (!kd || is_na(*kd)) continue;
    std::string kd_text = kd->to_csv_text(false);
    const Cell* dims = cell_at(unified, r, "Input Dims");
    std::string shape =
        dims && !is_na(*dims) ? first_shape_key_text(dims->to_csv_text(false)) : "None";
    for (const std::string& kn : kernel_detail_names(kd_text)) {
      auto [pos, inserted] = index.emplace(kn, lookup.size());
      if (inserted) lookup.push_back({kn, {}});
      auto& shapes = lookup[pos->second].second;
      if (std::any_of(shapes.begin(), shapes.end(), [&](auto& s) { return s.first == shape; }))
        continue;
      ojson entry = ojson::object();
      for (const char* col : {"Data Moved (MB)", "GFLOPS", "FLOPS/Byte", "Compute Spec"}) {
        const Cell* c = cell_at(unified, r, col);
        entry[col] = c && !is_na(*c) ? cell_to_json(*c) : ojson(nullptr);
      }
      shapes.push_back({shape, entry});
    }
  }
  return lookup;
}

ojson shape_aware_lookup(const PerfLookup& lookup, const std::string& kname,
                         const ojson& input_dims) {
  const std::vector<std::pair<std::string, ojson>>* shapes = nullptr;
  for (const auto& [name, s] : lookup)
    if (name == kname) shapes = &s;
  if (!shapes || shapes->empty())
    for (const auto& [name, s] : lookup)
      if (kname.starts_with(name) || name.starts_with(kname)) {
        shapes = &s;
        break;
      }
  if (!shapes || shapes->empty()) return ojson::object();
  std::string key = "None";
  bool truthy = !input_dims.is_null() && !(input_dims.is_array() && input_dims.empty());
  if (truthy) {
    // parse_first_shape(str(input_dims)); JSON arrays read back as Python lists.
    auto v = try_parse_py_literal(input_dims.dump());
    key = first_shape_key(v ? &*v : nullptr);
  }
  for (const auto& [k, entry] : *shapes)
    if (k == key) return entry;
  return shapes->front().second;
}

struct Enriched {
  std::string name, type;
  double dur_us = 0;
  std::optional<double> data_moved_mb, data_in_mb, data_out_mb, gflops;
  std::string compute_spec;
  bool has_perf_data = false;
};

bool is_matrix_op(const Enriched& e) {
  static const char* const kMatrix[] = {"matrix_fp16", "matrix_bf16", "matrix_fp32",
                                        "matrix_fp64", "matrix_fp8",  "matrix_int8"};
  for (const char* m : kMatrix)
    if (e.compute_spec == m) return true;
  std::string up = e.type;
  for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return up.find("GEMM") != std::string::npos || up.find("CONV") != std::string::npos;
}

bool is_norm_kernel(const Enriched& e) {
  for (const char* t : {"LayerNorm", "BatchNorm", "GroupNorm", "InstanceNorm", "Norm"})
    if (e.type == t) return true;
  std::string l = pycompat::ascii_lower(e.name);
  for (const char* p :
       {"batchnorm", "layernorm", "groupnorm", "instancenorm", "miopenbatchnorm", "rmsnorm"})
    if (l.find(p) != std::string::npos) return true;
  return false;
}

std::optional<double> opt_number(const ojson& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    char* end = nullptr;
    double d = std::strtod(v.get_ref<const std::string&>().c_str(), &end);
    if (end && *end == '\0') return d;
  }
  return std::nullopt;
}

double roofline_savings_us(const std::vector<Enriched>& group, double peak_bw, double vector_maf,
                           double matrix_maf, double target_pct) {
  std::vector<const Enriched*> modeled;
  for (const auto& e : group)
    if (e.has_perf_data) modeled.push_back(&e);
  if (modeled.empty()) return 0.0;
  const Enriched& first = *modeled.front();
  const Enriched& last = *modeled.back();
  double in_mb = first.data_in_mb ? *first.data_in_mb : *first.data_moved_mb / 2.0;
  double out_mb = last.data_out_mb ? *last.data_out_mb : *last.data_moved_mb / 2.0;
  double ext_bytes = (in_mb + out_mb) * 1e6;
  double vector_gflops = 0, matrix_gflops = 0;
  for (const Enriched* e : modeled) {
    if (!e->gflops || *e->gflops == 0) continue;
    (is_matrix_op(*e) ? matrix_gflops : vector_gflops) += *e->gflops;
  }
  if (ext_bytes <= 0) return 0.0;
  double frac = target_pct / 100.0;
  double memory_us = ext_bytes / (peak_bw * frac) * 1e6;
  double matrix_us =
      matrix_gflops > 0 ? matrix_gflops * 1e9 / (matrix_maf * 1e12 * frac) * 1e6 : 0.0;
  double vector_us =
      vector_gflops > 0 ? vector_gflops * 1e9 / (vector_maf * 1e12 * frac) * 1e6 : 0.0;
  double optimal = std::max({memory_us, matrix_us, vector_us});
  double summed = memory_us + matrix_us + vector_us;
  double fused = optimal + (1.0 - kOverlapEfficiency) * (summed - optimal);
  double unmodeled = 0, current = 0;
  for (const auto& e : group) {
    if (!e.has_perf_data) unmodeled += e.dur_us;
    current += e.dur_us;
  }
  return std::max(0.0, current - fused - unmodeled);
}

std::string classify_confidence(const ojson& cand, const std::vector<Enriched>& enriched) {
  std::string bn = pycompat::ascii_lower(cand.value("base_name", "")),
              mn = pycompat::ascii_lower(cand.value("module_name", ""));
  static const std::vector<std::pair<const char*, std::vector<const char*>>> kHints = {
      {"attention", {"attention", "sdpa", "self_attn"}},
      {"norm", {"rmsnorm", "rms_norm", "layernorm", "layer_norm", "batchnorm", "batch_norm"}},
      {"mlp", {"mlp"}},
      {"rope", {"rotary", "rope", "apply_rotary"}},
      {"siglu", {"silu", "swiglu"}}};
  bool name_signal = false;
  for (const auto& [p, hints] : kHints)
    for (const char* h : hints)
      if (bn.find(h) != std::string::npos || mn.find(h) != std::string::npos) name_signal = true;
  size_t n_gemm = 0;
  bool softmax = false, rsqrt = false, neg = false, cat = false;
  for (const auto& e : enriched) {
    std::string l = pycompat::ascii_lower(e.name);
    if (is_matrix_op(e)) ++n_gemm;
    softmax = softmax || l.find("softmax") != std::string::npos;
    rsqrt = rsqrt || l.find("rsqrt") != std::string::npos;
    neg = neg || l.find("neg") != std::string::npos;
    cat = cat || l.find("catarray") != std::string::npos || l.find("cat_") != std::string::npos;
  }
  size_t n_non_gemm = enriched.size() - n_gemm;
  bool comp_signal = (n_gemm >= 2 && softmax) || rsqrt || (n_gemm >= 2 && n_non_gemm >= 1) ||
                     (neg && cat) || (n_gemm == 0 && enriched.size() >= 3);
  if (name_signal && comp_signal) return "high";
  if (name_signal || comp_signal) return "medium";
  return "low";
}

std::optional<ojson> standalone_estimate(const ojson& cand, const PerfLookup& lookup,
                                         double peak_bw, double vector_maf, double matrix_maf,
                                         double baseline_ms) {
  std::string op_name = cand.contains("base_name") ? cand["base_name"].get<std::string>()
                                                   : cand.value("module_name", "Unknown");
  double instances = num(cand, "instance_count", 1);
  ojson kernels = value_or(cand, "kernels", ojson::array());
  if (kernels.size() < 2 || cand.value("has_fused_kernel", false)) return std::nullopt;
  ojson input_dims = value_or(cand, "input_dims", nullptr);
  std::vector<Enriched> enriched;
  for (const auto& k : kernels) {
    Enriched e;
    e.name = k.contains("name") ? k["name"].get<std::string>() : k.value("kernel_name", "");
    e.type = k.contains("type") ? k["type"].get<std::string>() : k.value("kernel_type", "Unknown");
    e.dur_us = num(k, "dur_us");
    ojson perf = shape_aware_lookup(lookup, e.name, input_dims);
    e.data_moved_mb = opt_number(value_or(perf, "Data Moved (MB)", nullptr));
    e.gflops = opt_number(value_or(perf, "GFLOPS", nullptr));
    ojson spec = value_or(perf, "Compute Spec", nullptr);
    e.compute_spec = spec.is_string() ? spec.get<std::string>() : "";
    e.data_in_mb = opt_number(value_or(k, "data_in_mb", nullptr));
    e.data_out_mb = opt_number(value_or(k, "data_out_mb", nullptr));
    e.has_perf_data = e.data_moved_mb.has_value();
    enriched.push_back(e);
  }
  size_t modeled =
      std::count_if(enriched.begin(), enriched.end(), [](auto& e) { return e.has_perf_data; });
  if (modeled == 0) return std::nullopt;
  if (std::all_of(enriched.begin(), enriched.end(), is_matrix_op)) return std::nullopt;
  if (std::any_of(enriched.begin(), enriched.end(),
                  [](auto& e) { return e.name.starts_with("triton_"); }))
    return std::nullopt;
  bool any_matrix = std::any_of(enriched.begin(), enriched.end(), is_matrix_op);
  std::vector<const Enriched*> non_matrix;
  for (const auto& e : enriched)
    if (!is_matrix_op(e)) non_matrix.push_back(&e);
  if (!non_matrix.empty() && any_matrix &&
      std::all_of(non_matrix.begin(), non_matrix.end(), [](auto* e) { return is_norm_kernel(*e); }))
    return std::nullopt;
  double modeled_frac = static_cast<double>(modeled) / static_cast<double>(enriched.size());
  double min_frac = enriched.size() < 5 ? 0.5 : 0.75;
  if (modeled_frac < min_frac) return std::nullopt;
  double current = 0;
  for (const auto& e : enriched) current += e.dur_us;
  if (current <= 0) return std::nullopt;

  // Split at matrix kernels into gemm_epilogue / elementwise / gemm_only groups.
  std::vector<std::vector<Enriched>> groups;
  std::vector<Enriched> cur;
  for (const auto& e : enriched) {
    if (is_matrix_op(e) && !cur.empty()) {
      groups.push_back(cur);
      cur = {e};
    } else {
      cur.push_back(e);
    }
  }
  if (!cur.empty()) groups.push_back(cur);
  double savings = 0;
  bool has_epilogue = false;
  for (const auto& g : groups) {
    bool gemm = std::any_of(g.begin(), g.end(), is_matrix_op);
    bool non_gemm = std::any_of(g.begin(), g.end(), [](auto& e) { return !is_matrix_op(e); });
    if (gemm && non_gemm) {
      has_epilogue = true;
      for (const auto& e : g)
        if (!is_matrix_op(e)) savings += e.dur_us;
    } else if (!gemm) {
      savings += roofline_savings_us(g, peak_bw, vector_maf, matrix_maf, kTargetHigh);
    }
  }
  double gap_high = savings / current;
  double gap_low = (kTargetLow / kTargetHigh) * gap_high;
  double gap_mid = (kTargetMid / kTargetHigh) * gap_high;
  if (savings * instances / 1000 < 0.1) return std::nullopt;
  double time_ms = current * instances / 1000;
  double high = gap_high * time_ms / baseline_ms * 100;
  double low = gap_low * time_ms / baseline_ms * 100;
  double mid = gap_mid * time_ms / baseline_ms * 100;
  if (high < kMinFusionImpact) return std::nullopt;

  ojson affected = ojson::array();
  for (const auto& e : enriched) affected.push_back(e.name);
  ojson est = ojson::object();
  est["operation"] = op_name;
  est["category"] = "kernel_fusion";
  est["type"] = "kernel_fusion";
  est["impact_score"] = pycompat::python_round(mid, 2);
  est["impact_score_low"] = pycompat::python_round(low, 2);
  est["impact_score_high"] = pycompat::python_round(high, 2);
  est["estimation"] = modeled == enriched.size() ? "full" : "partial";
  est["bound_type"] = has_epilogue ? "compute" : "memory";
  est["time_ms"] = pycompat::python_round(time_ms, 3);
  est["instance_count"] = value_or(cand, "instance_count", 1);
  est["kernel_count"] = kernels.size();
  est["modeled_kernel_count"] = modeled;
  est["confidence"] = classify_confidence(cand, enriched);
  est["affected_gpu_kernels"] = affected;
  est["fusion_type"] = any_matrix ? "matrix_compute" : "memory_bound";
  size_t unmodeled = enriched.size() - modeled;
  if (unmodeled > 0)
    est["warning"] = std::to_string(unmodeled) + " of " + std::to_string(kernels.size()) +
                     " kernels lack perf models; savings estimate uses trace time for unmodeled "
                     "kernels";
  return est;
}

std::vector<ojson> filter_and_dedup(const ojson& candidates, double baseline_ms) {
  std::vector<ojson> filtered;
  for (const auto& c : candidates)
    if (num(c, "kernel_count") <= kMaxFusionKernels) filtered.push_back(c);
  if (baseline_ms > 0) {
    double min_us = baseline_ms * 10 * kMinFusionImpact;
    std::erase_if(filtered,
                  [&](const ojson& c) { return num(c, "total_kernel_time_us") < min_us; });
  }
  std::vector<std::pair<std::tuple<double, double, double>, ojson>> seen;
  for (const auto& c : filtered) {
    auto sig = std::make_tuple(num(c, "instance_count"), num(c, "kernel_count"),
                               pycompat::python_round(num(c, "total_kernel_time_us"), 1));
    auto it = std::find_if(seen.begin(), seen.end(), [&](auto& p) { return p.first == sig; });
    if (it == seen.end())
      seen.push_back({sig, c});
    else if (c.value("module_name", "").size() < it->second.value("module_name", "").size())
      it->second = c;
  }
  std::vector<ojson> out;
  for (auto& [sig, c] : seen) out.push_back(c);
  return out;
}

std::optional<ojson> arch_from_metadata(const std::string& output_dir) {
  std::string dir = output_dir + "/metadata";
  if (!fs::is_directory(dir)) return std::nullopt;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().ends_with("_metadata.json"))
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    ojson meta = read_json_file(f);
    if (meta.contains("peak_hbm_bw_tbs") && meta.contains("max_achievable_tflops"))
      return ojson{{"peak_hbm_bw_tbs", meta["peak_hbm_bw_tbs"]},
                   {"max_achievable_tflops", meta["max_achievable_tflops"]}};
  }
  return std::nullopt;
}

}  // namespace

ojson kernel_fusion_metrics(const std::string& output_dir) {
  auto error = [](const std::string& msg) {
    return ojson{{"category", "kernel_fusion"}, {"status", "ERROR"}, {"error", msg}};
  };
  std::string fc_path = output_dir + "/category_data/fusion_candidates.json";
  if (!fs::exists(fc_path)) return error("Fusion candidates not found: " + fc_path);
  ojson candidates = read_json_file(fc_path);
  std::string manifest_path = output_dir + "/category_data/category_manifest.json";
  ojson manifest = fs::exists(manifest_path) ? read_json_file(manifest_path) : ojson::object();
  std::string csv_path = perf_csv_dir(output_dir) + "/unified_perf_summary.csv";
  if (!fs::exists(csv_path)) return error("Perf summary CSV not found: " + csv_path);

  double baseline_ms = num(value_or(manifest, "gpu_utilization", ojson::object()), "total_time_ms");
  std::vector<ojson> kept =
      filter_and_dedup(candidates.is_array() ? candidates : ojson::array(), baseline_ms);
  if (kept.empty())
    return {{"category", "kernel_fusion"},
            {"status", "NO_DATA"},
            {"candidate_count", 0},
            {"impact_estimates", ojson::array()}};
  std::string platform = manifest.value("platform", "MI300X");
  std::optional<ojson> arch = arch_from_metadata(output_dir);
  if (!arch) {
    try {
      ojson a = load_arch_json(platform);
      arch = ojson{{"peak_hbm_bw_tbs", a["mem_bw_gbps"].get<double>() / 1000},
                   {"max_achievable_tflops", a["max_achievable_tflops"]}};
    } catch (const std::exception&) {
      return error("No arch config found for platform " + platform + " in metadata or arch JSON");
    }
  }
  ojson peak_bw_tbs = (*arch)["peak_hbm_bw_tbs"];
  const ojson& maf = (*arch)["max_achievable_tflops"];
  double matrix_maf = num(maf, "matrix_bf16", 1);
  double vector_maf = num(maf, "vector_bf16", matrix_maf);
  double peak_bw = peak_bw_tbs.get<double>() * 1e12;

  PerfLookup lookup = build_perf_lookup(read_csv_typed(csv_path));
  std::vector<ojson> estimates;
  if (baseline_ms > 0)
    for (const auto& c : kept)
      if (auto e = standalone_estimate(c, lookup, peak_bw, vector_maf, matrix_maf, baseline_ms))
        estimates.push_back(*e);
  std::stable_sort(estimates.begin(), estimates.end(), [](const ojson& a, const ojson& b) {
    return a["impact_score"].get<double>() > b["impact_score"].get<double>();
  });

  double total_us = 0, total_impact = 0;
  for (const auto& c : kept) total_us += num(c, "total_kernel_time_us");
  ojson est_arr = ojson::array(), warnings = ojson::array(), kernel_map = ojson::object();
  for (const auto& e : estimates) {
    total_impact += e["impact_score"].get<double>();
    est_arr.push_back(e);
    if (e.contains("warning")) warnings.push_back(e["warning"]);
    if (e["confidence"] == "high")
      for (const auto& kn : e["affected_gpu_kernels"])
        if (!kn.get<std::string>().empty()) kernel_map[kn.get<std::string>()] = e["operation"];
  }
  ojson m = ojson::object();
  m["category"] = "kernel_fusion";
  m["status"] = "OK";
  m["total_time_ms"] = pycompat::python_round(total_us / 1000, 3);
  m["candidate_count"] = kept.size();
  m["estimated_count"] = estimates.size();
  m["total_impact_score"] = pycompat::python_round(total_impact, 2);
  m["platform"] = platform;
  m["peak_hbm_bw_tbs"] = peak_bw_tbs;
  m["impact_estimates"] = est_arr;
  if (!warnings.empty()) m["warnings"] = warnings;
  m["high_confidence_kernel_map"] = kernel_map;
  return m;
}

}  // namespace jarvis::analysis::detail
