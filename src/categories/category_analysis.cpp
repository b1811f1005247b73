#include "categories/category_analysis.h"
#include "categories/category_insights.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "base/text_match.h"
#include "categories/category_analysis_common.h"
#include "categories/category_analysis_internal.h"
#include "categories/kernel_details_text.h"
#include "categories/op_regimes.h"
#include "categories/prepare.h"
#include "pycompat/json.h"
#include "pycompat/numeric.h"
#include "pycompat/text.h"
#include "report/pandas_roundtrip.h"

namespace jarvis::analysis {

namespace fs = std::filesystem;

namespace {

constexpr const char* kKernelMean = "Kernel Time (\xC2\xB5s)_mean";
constexpr const char* kKernelStd = "Kernel Time (\xC2\xB5s)_std";

// analysis_utils constants.
constexpr double kTargetHigh = detail::kImpactTargetHigh, kTargetMid = detail::kImpactTargetMid,
                 kTargetLow = detail::kImpactTargetLow;
constexpr double kMinPItemImpact = 0.5;
constexpr double kHeuristicLow = detail::kHeuristicSavingLow,
                 kHeuristicMid = detail::kHeuristicSavingMid,
                 kHeuristicHigh = detail::kHeuristicSavingHigh;
constexpr double kMinImpactScore = 0.01;
constexpr size_t kCallChainMaxOps = 100;
constexpr size_t kKernelNameTrunc = 75;

bool contains_any(const std::string& hay, std::initializer_list<const char*> needles) {
  for (const char* n : needles)
    if (contains(hay, n)) return true;
  return false;
}

// row.get(col) as Python sees it: absent column and NaN both read as "NA".
struct Row {
  const Table& t;
  size_t r;
  const Cell* get(std::string_view col) const { return cell_at(t, r, col); }
  bool has(std::string_view col) const { return t.col(col) >= 0; }
  bool na(std::string_view col) const {
    const Cell* c = get(col);
    return !c || is_na(*c);
  }
  double num(std::string_view col) const { return cell_number(get(col)); }
  std::string text(std::string_view col) const { return cell_text(get(col)); }
};

using Classifier = std::function<ojson(const std::string&, const Row&)>;

struct CategoryConfig {
  std::vector<std::string> extra_fields;
  Classifier classifier;
};

// ---------------------------------------------------------------- efficiency

ojson calculate_efficiency(const Row& row, const ojson& peak_hbm_bw, const ojson& maf) {
  ojson r = ojson::object();
  r["tflops_achieved"] = nullptr;
  r["tb_s_achieved"] = nullptr;
  r["efficiency_percent"] = nullptr;
  r["bound_type"] = nullptr;
  r["flops_per_byte"] = nullptr;
  r["compute_spec"] = nullptr;
  r["resolved_peak_maf"] = nullptr;
  r["resolved_peak_hbm_bw"] = nullptr;
  r["warning"] = nullptr;
  r["is_anomaly"] = false;

  double fpb = row.na("FLOPS/Byte") ? 0.0 : row.num("FLOPS/Byte");
  if (fpb != 0.0) r["flops_per_byte"] = pycompat::python_round(fpb, 2);
  if (!row.na("TFLOPS/s_mean"))
    r["tflops_achieved"] = pycompat::python_round(row.num("TFLOPS/s_mean"), 2);
  if (!row.na("TB/s_mean")) r["tb_s_achieved"] = pycompat::python_round(row.num("TB/s_mean"), 2);
  std::string spec = row.text("Compute Spec");
  if (!spec.empty()) r["compute_spec"] = spec;

  ojson peak_maf;
  if (maf.is_object()) {
    peak_maf = maf.contains("matrix_bf16") ? maf["matrix_bf16"] : ojson(1);
    if (!spec.empty() && maf.contains(spec)) peak_maf = maf[spec];
  } else {
    peak_maf = maf;
  }
  auto truthy = [](const ojson& v) {
    return !v.is_null() && !(v.is_number() && v.get<double>() == 0.0);
  };
  if (truthy(peak_maf)) r["resolved_peak_maf"] = pycompat::py_round_json(peak_maf, 2);
  if (truthy(peak_hbm_bw)) r["resolved_peak_hbm_bw"] = pycompat::py_round_json(peak_hbm_bw, 2);

  std::string bound = row.text("Roofline Bound");
  if (bound == "COMPUTE_BOUND")
    r["bound_type"] = "compute";
  else if (bound == "MEMORY_BOUND")
    r["bound_type"] = "memory";

  if (!row.na("Pct Roofline_mean")) {
    double pct = pycompat::python_round(row.num("Pct Roofline_mean"), 2);
    r["efficiency_percent"] = pct;
    if (pct > 110) {
      r["warning"] = "[ANOMALY] Pct Roofline exceeds 110% (" + detail::fixed(pct, 1) +
                     "%) - verify measurement";
      r["is_anomaly"] = true;
    }
  }
  return r;
}

// ------------------------------------------------------------- call stacks

std::vector<PyValue> parse_stack(const std::string& cs) {
  if (cs.empty() || cs == "nan") return {};
  auto v = try_parse_py_literal(cs);
  if (!v || v->kind != PyValue::Kind::List) return {};
  return v->list;
}

std::vector<std::string> string_frames(const std::string& cs) {
  std::vector<std::string> out;
  for (const auto& f : parse_stack(cs))
    if (f.kind == PyValue::Kind::String) out.push_back(f.s);
  return out;
}

ojson module_chain(const std::string& cs) {
  ojson out = ojson::array();
  for (const auto& f : string_frames(cs))
    if (f.starts_with("nn.Module: ")) out.push_back(f.substr(11));
  return out;
}

ojson call_chain(const std::string& cs) {
  static const char* const kSkip[] = {"torch/nn/modules/module.py", "torch/utils/_device.py",
                                      "torch/overrides.py",         "torch/_ops.py",
                                      "multiprocessing/spawn.py",   "torch/_dynamo/eval_frame.py",
                                      "torch/_functorch/",          "torch/autograd/function.py",
                                      "torch/_inductor/",           "torch/cuda/graphs.py",
                                      "torch/utils/_contextlib.py"};
  ojson out = ojson::array();
  for (const auto& f : string_frames(cs)) {
    bool skip = false;
    for (const char* s : kSkip) skip = skip || contains(f, s);
    if (skip) continue;
    if (f.starts_with("nn.Module:") || contains(f, ".py") || contains(f, "::")) out.push_back(f);
  }
  return out;
}

std::pair<std::string, std::string> kernel_names(const std::string& cs) {
  auto stack = parse_stack(cs);
  if (stack.empty()) return {"", ""};
  std::vector<std::string> kernels;
  bool has_sublists = std::any_of(stack.begin(), stack.end(),
                                  [](const PyValue& f) { return f.kind == PyValue::Kind::List; });
  if (!has_sublists) {
    if (stack.back().kind == PyValue::Kind::String && !stack.back().s.empty())
      kernels.push_back(stack.back().s);
  } else {
    for (const auto& f : stack)
      if (f.kind == PyValue::Kind::List && !f.list.empty() &&
          f.list.back().kind == PyValue::Kind::String)
        kernels.push_back(f.list.back().s);
  }
  if (kernels.empty()) return {"", ""};
  auto trunc = [](const std::string& n) {
    return n.size() > kKernelNameTrunc ? n.substr(0, kKernelNameTrunc) + "..." : n;
  };
  if (kernels.size() == 1) return {kernels[0], trunc(kernels[0])};
  std::string full, cut;
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::string sep = k ? "<br>" : "";
    full += sep + "Kernel " + std::to_string(k + 1) + ": " + kernels[k];
    cut += sep + "Kernel " + std::to_string(k + 1) + ": " + trunc(kernels[k]);
  }
  return {full, cut};
}

std::optional<std::string> match_fusion(const std::string& kd, const ojson& fusion_map) {
  for (const auto& kn : kernel_detail_names(kd)) {
    if (fusion_map.contains(kn)) return fusion_map[kn].get<std::string>();
    for (const auto& [fk, bn] : fusion_map.items())
      if (fk.starts_with(kn) || kn.starts_with(fk)) return bn.get<std::string>();
  }
  return std::nullopt;
}

ojson load_fusion_map(const std::string& output_dir) {
  std::string path = output_dir + "/category_data/kernel_fusion_metrics.json";
  if (!fs::exists(path)) return ojson::object();
  try {
    ojson m = read_json_file(path);
    if (m.contains("high_confidence_kernel_map") && m["high_confidence_kernel_map"].is_object())
      return m["high_confidence_kernel_map"];
  } catch (const std::exception&) {
  }
  return ojson::object();
}

// ------------------------------------------------------------- operations

ojson build_operations(const Table& ops, const ojson& metadata, const CategoryConfig& config,
                       const std::string& output_dir) {
  ojson peak_hbm = metadata.contains("peak_hbm_bw_tbs") ? metadata["peak_hbm_bw_tbs"] : ojson(1);
  ojson maf = metadata.contains("max_achievable_tflops")  ? metadata["max_achievable_tflops"]
              : metadata.contains("peak_bf16_maf_tflops") ? metadata["peak_bf16_maf_tflops"]
                                                          : ojson(1);
  ojson fusion_map = load_fusion_map(output_dir);
  double e2e = 0;
  if (metadata.contains("gpu_utilization") && metadata["gpu_utilization"].contains("total_time_ms"))
    e2e = metadata["gpu_utilization"]["total_time_ms"].get<double>();

  bool has_kernel = ops.col(kKernelSum) >= 0;
  double total_ms =
      has_kernel ? pycompat::pandas_series_sum(column_numbers(ops, kKernelSum)) / 1000.0 : 0.0;

  std::vector<size_t> order = detail::operation_order(ops);

  ojson operations = ojson::array();
  std::vector<std::string> raw_stacks;
  for (size_t r : order) {
    Row row{ops, r};
    std::string name =
        row.has("name") && !row.na("name") ? row.get("name")->to_csv_text(false) : "Unknown";
    if (row.get("name") && row.get("name")->is_text()) name = row.get("name")->text();
    double count_d = row.has("count")             ? row.num("count")
                     : row.has("operation_count") ? row.num("operation_count")
                                                  : 1.0;
    int64_t count = static_cast<int64_t>(count_d);
    double time_ms = (has_kernel ? row.num(kKernelSum) : 0.0) / 1000.0;

    ojson op = ojson::object();
    op["name"] = name;
    op["count"] = count;
    op["time_ms"] = pycompat::python_round(time_ms, 3);
    // total_ms is a numpy scalar (column sum), so this ratio rounds the numpy way.
    op["percent_of_category"] =
        total_ms > 0 ? ojson(pycompat::numpy_round(time_ms / total_ms * 100, 2)) : ojson(0);
    op["percent_of_total"] =
        e2e > 0 ? ojson(pycompat::python_round(time_ms / e2e * 100, 2)) : ojson(nullptr);
    ojson eff = calculate_efficiency(row, peak_hbm, maf);
    op["efficiency"] = eff;
    if (!eff["warning"].is_null()) op["efficiency_warning"] = eff["warning"];
    for (const auto& field : config.extra_fields)
      if (!row.na(field)) op[field] = cell_to_json(*row.get(field));
    std::string args = format_args(row.get("Input Dims"), row.get("Input type"));
    if (!args.empty()) op["args"] = args;

    double e2e_frac = e2e > 0 ? time_ms / e2e : 1.0;
    if (count > 10 && e2e_frac >= 0.05 && !row.na(kKernelStd) && !row.na(kKernelMean) &&
        row.num(kKernelMean) > 0) {
      double cov = pycompat::python_round(row.num(kKernelStd) / row.num(kKernelMean), 3);
      op["cov"] = cov;
      op["high_variance"] = cov > 1.0;
    }
    if (config.classifier) op["classification"] = config.classifier(name, row);

    std::string kd = row.na("kernel_details_summary")
                         ? ""
                         : row.get("kernel_details_summary")->to_csv_text(false);
    std::string library = classify_kernel_library(name, kd);
    op["library"] = library.empty() ? ojson(nullptr) : ojson(library);
    if (!fusion_map.empty() && !kd.empty())
      if (auto matched = match_fusion(kd, fusion_map)) {
        op["fusion_flagged"] = true;
        op["fusion_candidate_name"] = *matched;
      }

    std::string cs = row.na("call_stack_full") ? "" : row.text("call_stack_full");
    // Deviation: a NaN entry_point is treated as empty (TraceLens would emit NaN).
    std::string launcher = row.na("entry_point") ? "" : row.text("entry_point");
    ojson modules = module_chain(cs);
    if (launcher.empty() || launcher == "Not found") {
      if (!modules.empty()) {
        launcher.clear();
        for (size_t k = 0; k < modules.size() && k < 3; ++k)
          launcher += (k ? " > " : "") + modules[k].get<std::string>();
      } else if (!library.empty()) {
        launcher = library + " (vendor)";
      } else {
        launcher = "Not found";
      }
    }
    op["launcher_path"] = launcher;
    auto [kname, ktrunc] = kernel_names(cs);
    op["kernel_name"] = kname;
    op["kernel_name_trunc"] = ktrunc;
    op["module_chain"] = modules;
    raw_stacks.push_back(cs);
    operations.push_back(std::move(op));
  }
  if (operations.size() <= kCallChainMaxOps)
    for (size_t k = 0; k < operations.size(); ++k)
      operations[k]["call_chain"] = call_chain(raw_stacks[k]);
  return operations;
}

// ------------------------------------------------------- impact estimates

ojson impact_estimates(const ojson& operations, const std::string& category, double baseline_ms) {
  bool baseline_ok = baseline_ms > 0;
  std::vector<ojson> est;
  for (const auto& op : operations) {
    if (op.contains("fusion_flagged") && op["fusion_flagged"].get<bool>()) continue;
    double time_ms = op["time_ms"].get<double>();
    if (time_ms <= 0) continue;
    const ojson& eff = op["efficiency"];
    bool anomaly = eff["is_anomaly"].get<bool>();
    if (!eff["efficiency_percent"].is_null() && !anomaly && baseline_ok) {
      double pct = eff["efficiency_percent"].get<double>();
      double gap_high = std::max(0.0, 1 - pct / kTargetHigh);
      double gap_low = (kTargetLow / kTargetHigh) * gap_high;
      double gap_mid = (kTargetMid / kTargetHigh) * gap_high;
      double high = gap_high * time_ms / baseline_ms * 100;
      double low = gap_low * time_ms / baseline_ms * 100;
      double mid = gap_mid * time_ms / baseline_ms * 100;
      if (high < kMinImpactScore) continue;
      ojson e = ojson::object();
      e["operation"] = op["name"];
      e["category"] = category;
      e["type"] = "kernel_tuning";
      e["estimate_method"] = "quantified";
      e["impact_score"] = pycompat::python_round(mid, 2);
      e["impact_score_low"] = pycompat::python_round(low, 2);
      e["impact_score_high"] = pycompat::python_round(high, 2);
      e["efficiency_pct"] = pycompat::python_round(pct, 2);
      e["bound_type"] = eff["bound_type"];
      e["library"] = op["library"];
      e["time_ms"] = pycompat::python_round(time_ms, 3);
      est.push_back(std::move(e));
    } else {
      const ojson& pct_j = op["percent_of_total"];
      if (pct_j.is_null() || pct_j.get<double>() <= 0) continue;
      double pct = pct_j.get<double>();
      ojson e = ojson::object();
      e["operation"] = op["name"];
      e["category"] = category;
      e["type"] = "unmodeled_significant";
      e["estimate_method"] = "heuristic";
      e["impact_score"] = pycompat::python_round(pct * kHeuristicMid, 2);
      e["impact_score_low"] = pycompat::python_round(pct * kHeuristicLow, 2);
      e["impact_score_high"] = pycompat::python_round(pct * kHeuristicHigh, 2);
      e["efficiency_pct"] = nullptr;
      e["bound_type"] = nullptr;
      e["library"] = op["library"];
      e["time_ms"] = pycompat::python_round(time_ms, 3);
      e["percent_of_total"] = pct_j;
      est.push_back(std::move(e));
    }
  }
  std::stable_sort(est.begin(), est.end(), [](const ojson& a, const ojson& b) {
    return a["impact_score"].get<double>() > b["impact_score"].get<double>();
  });
  ojson out = ojson::array();
  for (auto& e : est) out.push_back(std::move(e));
  return out;
}

std::string eff_bucket(const ojson& pct) {
  if (pct.is_null()) return "unknown";
  double p = pct.get<double>();
  if (p < 30) return "0-30";
  if (p < 60) return "30-60";
  return "60-100";
}

struct Group {
  std::vector<ojson> members;
  double impact = 0, low = 0, high = 0, pct = 0;
  ojson library;
  bool library_set = false;
};

ojson sorted_members(std::vector<ojson> members) {
  std::stable_sort(members.begin(), members.end(), [](const ojson& a, const ojson& b) {
    return a["impact_score"].get<double>() > b["impact_score"].get<double>();
  });
  ojson out = ojson::array();
  for (auto& m : members) out.push_back(std::move(m));
  return out;
}

ojson category_findings(const ojson& estimates) {
  std::vector<std::pair<std::tuple<std::string, std::string, std::string>, Group>> groups;
  std::vector<std::pair<std::string, Group>> hgroups;
  for (const auto& e : estimates) {
    bool heuristic = e["estimate_method"] == "heuristic";
    Group* g = nullptr;
    if (!heuristic) {
      std::string bound = e["bound_type"].is_string() ? e["bound_type"].get<std::string>() : "";
      std::string lib = e["library"].is_string() ? e["library"].get<std::string>() : "";
      auto key = std::make_tuple(bound.empty() ? "unknown" : bound, lib.empty() ? "Unknown" : lib,
                                 eff_bucket(e["efficiency_pct"]));
      auto it = std::find_if(groups.begin(), groups.end(), [&](auto& p) { return p.first == key; });
      if (it == groups.end()) it = groups.insert(groups.end(), {key, Group{}});
      g = &it->second;
    } else {
      std::string op = e["operation"].get<std::string>();
      auto it =
          std::find_if(hgroups.begin(), hgroups.end(), [&](auto& p) { return p.first == op; });
      if (it == hgroups.end()) it = hgroups.insert(hgroups.end(), {op, Group{}});
      g = &it->second;
      g->pct += e["percent_of_total"].is_number() ? e["percent_of_total"].get<double>() : 0.0;
      if (!g->library_set || g->library.is_null()) {
        g->library = e["library"];
        g->library_set = true;
      }
    }
    g->members.push_back(e);
    g->impact += e["impact_score"].get<double>();
    g->low += e["impact_score_low"].get<double>();
    g->high += e["impact_score_high"].get<double>();
  }
  std::vector<ojson> findings;
  for (auto& [key, g] : groups) {
    if (g.impact < kMinPItemImpact) continue;
    ojson f = ojson::object();
    f["bound_type"] = std::get<0>(key);
    f["library"] = std::get<1>(key);
    f["eff_bucket"] = std::get<2>(key);
    f["estimate_method"] = "quantified";
    f["impact_score"] = pycompat::python_round(g.impact, 2);
    f["impact_score_low"] = pycompat::python_round(g.low, 2);
    f["impact_score_high"] = pycompat::python_round(g.high, 2);
    f["member_count"] = g.members.size();
    f["members"] = sorted_members(g.members);
    findings.push_back(std::move(f));
  }
  for (auto& [op, g] : hgroups) {
    if (g.impact < kMinPItemImpact) continue;
    ojson f = ojson::object();
    f["bound_type"] = "unmodeled";
    f["library"] = g.library.is_string() ? g.library : ojson("Unknown");
    f["eff_bucket"] = "unknown";
    f["estimate_method"] = "heuristic";
    f["impact_score"] = pycompat::python_round(g.impact, 2);
    f["impact_score_low"] = pycompat::python_round(g.low, 2);
    f["impact_score_high"] = pycompat::python_round(g.high, 2);
    f["percent_of_total"] = pycompat::python_round(g.pct, 2);
    f["member_count"] = g.members.size();
    f["members"] = sorted_members(g.members);
    findings.push_back(std::move(f));
  }
  std::stable_sort(findings.begin(), findings.end(), [](const ojson& a, const ojson& b) {
    return a["impact_score"].get<double>() > b["impact_score"].get<double>();
  });
  ojson out = ojson::array();
  int rank = 1;
  for (auto& f : findings) {
    f["rank"] = rank++;
    out.push_back(std::move(f));
  }
  return out;
}

// ------------------------------------------------- per-category specifics

ojson peak_specs(const ojson& metadata) {
  ojson s = ojson::object();
  const ojson* maf =
      metadata.contains("max_achievable_tflops") ? &metadata["max_achievable_tflops"] : nullptr;
  if (maf && maf->is_object())
    s["peak_maf_tflops"] = maf->contains("matrix_bf16") ? (*maf)["matrix_bf16"] : ojson(nullptr);
  else
    s["peak_maf_tflops"] = metadata.contains("peak_bf16_maf_tflops")
                               ? metadata["peak_bf16_maf_tflops"]
                               : ojson(nullptr);
  s["peak_hbm_bw_tbs"] =
      metadata.contains("peak_hbm_bw_tbs") ? metadata["peak_hbm_bw_tbs"] : ojson(nullptr);
  return s;
}

ojson peak_hbm_only(const ojson& metadata) {
  ojson s = ojson::object();
  s["peak_hbm_bw_tbs"] =
      metadata.contains("peak_hbm_bw_tbs") ? metadata["peak_hbm_bw_tbs"] : ojson(nullptr);
  return s;
}

void merge(ojson& into, const ojson& from) {
  for (const auto& [k, v] : from.items()) into[k] = v;
}

std::vector<std::string> names_of(const Table& ops) {
  std::vector<std::string> out;
  int c = ops.col("name");
  for (const auto& row : ops.rows)
    out.push_back(c < 0 || is_na(row[static_cast<size_t>(c)])
                      ? "nan"
                      : row[static_cast<size_t>(c)].to_csv_text(false));
  return out;
}

bool is_quantized_gemm(const std::string& name) {
  return contains_any(pycompat::ascii_lower(name),
                      {"w8a8", "int8", "fp8", "w4a16", "w4a4", "fp4", "mxfp4"});
}

std::string triton_kind(const std::string& name) {
  std::string l = pycompat::ascii_lower(name);
  if (l.starts_with("triton_poi_")) return "pointwise";
  if (l.starts_with("triton_red_")) return "reduction";
  if (l.starts_with("triton_per_")) return "persistent";
  return "other";
}

std::string other_kind(const std::string& name) {
  std::string l = pycompat::ascii_lower(name);
  if (contains_any(l, {"all_reduce", "collective", "ncclkernel", "rccl", "broadcast", "allgather"}))
    return "communication";
  if (contains_any(l, {"graph", "hipgraph", "cudagraph"})) return "graph";
  return "miscellaneous";
}

// ---- SDPA
bool is_flash(const std::string& name) {
  return contains_any(pycompat::ascii_lower(name),
                      {"flash", "fmha", "flash_attention", "flashattn"});
}
// kernel_details: nullopt = absent/empty (falsy), else the text ("nan" for NaN).
bool is_paged(const std::string& name, const std::optional<std::string>& kd) {
  if (contains_any(pycompat::ascii_lower(name), {"unified_attention", "paged_attention", "vllm"}))
    return true;
  if (kd) {
    std::string l = pycompat::ascii_lower(*kd);
    if (contains(l, "kernel_paged_attention") || contains(l, "paged_attention_2d")) return true;
  }
  return false;
}

std::optional<std::string> optional_text(const Row& row, const char* col) {
  if (!row.has(col)) return std::nullopt;
  const Cell* c = row.get(col);
  if (is_na(*c)) return std::string("nan");  // NaN is truthy in Python
  std::string s = c->to_csv_text(false);
  if (s.empty()) return std::nullopt;
  return s;
}

struct KernelBreakdown {
  std::vector<ojson> kernels;
  bool paged = false, fwd = false, reshape = false;
};

KernelBreakdown parse_kernel_breakdown(const std::optional<std::string>& kd_in) {
  KernelBreakdown out;
  if (!kd_in || *kd_in == "nan") return out;
  std::string kd;
  for (size_t k = 0; k < kd_in->size(); ++k) {
    if (kd_in->compare(k, 11, "np.float64(") == 0) {
      k += 10;
      continue;
    }
    if ((*kd_in)[k] != ')') kd += (*kd_in)[k];
  }
  double total = 0;
  for (const auto& [name, mean] : kernel_detail_means(kd)) {
    total += mean;
    std::string l = pycompat::ascii_lower(name), type = "other";
    if (contains(l, "reshape_and_cache")) {
      type = "reshape_cache";
      out.reshape = true;
    } else if (contains(l, "paged_attention")) {
      type = "paged_attention";
      out.paged = true;
    } else if (contains(l, "_fwd_kernel") || contains(l, "fwd_kernel")) {
      type = "fwd_kernel";
      out.fwd = true;
    }
    out.kernels.push_back({{"name", name}, {"mean_us", mean}, {"kernel_type", type}});
  }
  if (total > 0)
    for (auto& k : out.kernels)
      k["percent"] = pycompat::python_round(k["mean_us"].get<double>() / total * 100, 2);
  return out;
}

ojson json_or_null(const PyValue* v) {
  return v ? v->to_ojson() : ojson(nullptr);
}

// parse_perf_params: nullopt for missing text (returns the all-None default).
ojson parse_perf_params(const std::optional<std::string>& text) {
  ojson r = {{"batch_size", nullptr},
             {"n_q", nullptr},
             {"h_q", nullptr},
             {"n_kv", nullptr},
             {"h_kv", nullptr},
             {"d_h_qk", nullptr},
             {"d_h_v", nullptr},
             {"dropout", nullptr},
             {"causal", nullptr},
             {"flash_impl", nullptr},
             {"sum_ctx_tokens", nullptr},
             {"sum_gen_tokens", nullptr},
             {"ctx_ratio", nullptr},
             {"workload_type", "unknown"}};
  if (!text || *text == "nan") return r;
  auto params = try_parse_py_literal(*text);
  if (!params || params->kind != PyValue::Kind::Dict) return r;
  const std::pair<const char*, const char*> keys[] = {
      {"batch_size", "B"},  {"n_q", "N_Q"},
      {"h_q", "H_Q"},       {"n_kv", "N_KV"},
      {"h_kv", "H_KV"},     {"d_h_qk", "d_h_qk"},
      {"d_h_v", "d_h_v"},   {"dropout", "dropout"},
      {"causal", "causal"}, {"flash_impl", "flash_impl"}};
  for (const auto& [dst, src] : keys) r[dst] = json_or_null(params->get(src));
  const PyValue* ctx = params->get("sum_ctx_tokens");
  const PyValue* gen = params->get("sum_gen_tokens");
  r["sum_ctx_tokens"] = ctx ? ctx->to_ojson() : ojson(0);
  r["sum_gen_tokens"] = gen ? gen->to_ojson() : ojson(0);
  double c = ctx && ctx->is_number() ? ctx->as_double() : 0,
         g = gen && gen->is_number() ? gen->as_double() : 0;
  if (c + g > 0) {
    double ratio = c / (c + g);
    r["ctx_ratio"] = pycompat::python_round(ratio, 3);
    r["workload_type"] = ratio > 0.8 ? "prefill_heavy" : ratio < 0.2 ? "decode_heavy" : "mixed";
  }
  const PyValue* hq = params->get("H_Q");
  const PyValue* hkv = params->get("H_KV");
  if (hq && hkv && hq->truthy() && hkv->truthy() && hq->is_number() && hkv->is_number()) {
    if (hkv->as_double() < hq->as_double()) {
      r["attention_pattern"] = "GQA";
      r["gqa_ratio"] = static_cast<int64_t>(std::floor(hq->as_double() / hkv->as_double()));
    } else if (hkv->as_double() == hq->as_double()) {
      r["attention_pattern"] = "MHA";
    } else {
      r["attention_pattern"] = "unknown";
    }
  }
  return r;
}

ojson classify_sdpa(const std::string& name, const Row& row) {
  bool has_model = false;
  if (row.has("has_perf_model")) {
    const Cell* c = row.get("has_perf_model");
    has_model = is_na(*c) ? true : cell_number(c) != 0 || (c->is_text() && !c->text().empty());
  }
  std::optional<std::string> kd = optional_text(row, "kernel_details_summary");
  bool flash = is_flash(name), paged = is_paged(name, kd);
  ojson r = ojson::object();
  r["is_flash_attention"] = flash;
  r["is_paged_attention"] = paged;
  r["has_perf_model"] = has_model;
  r["attention_type"] = paged ? "paged" : flash ? "flash" : "standard";
  if (paged && kd) {
    KernelBreakdown b = parse_kernel_breakdown(kd);
    if (!b.kernels.empty()) {
      ojson kb = ojson::object();
      kb["has_paged_attention_kernel"] = b.paged;
      kb["has_fwd_kernel"] = b.fwd;
      kb["has_reshape_cache"] = b.reshape;
      ojson ks = ojson::array();
      for (auto& k : b.kernels) ks.push_back(k);
      kb["kernels"] = ks;
      r["kernel_breakdown"] = kb;
    }
  }
  std::optional<std::string> pp = optional_text(row, "perf_params");
  if (pp) {
    ojson w = parse_perf_params(pp);
    ojson wp = ojson::object();
    for (const char* k : {"n_q", "n_kv", "h_q", "h_kv", "sum_ctx_tokens", "sum_gen_tokens",
                          "ctx_ratio", "workload_type", "attention_pattern", "gqa_ratio"})
      wp[k] = w.contains(k) ? w[k] : ojson(nullptr);
    r["workload_profile"] = wp;
  }
  return r;
}

ojson sdpa_specific(const Table& ops, const ojson& metadata) {
  int64_t flash = 0, paged = 0, breakdowns = 0;
  double reshape_pct = 0, fwd_pct = 0, paged_pct = 0;
  double ctx_total = 0, gen_total = 0;
  bool ctx_int = true;
  for (size_t r = 0; r < ops.rows.size(); ++r) {
    Row row{ops, r};
    std::string name = row.na("name") ? "nan" : row.get("name")->to_csv_text(false);
    auto kd = optional_text(row, "kernel_details_summary");
    if (is_flash(name)) ++flash;
    if (is_paged(name, kd)) {
      ++paged;
      KernelBreakdown b = parse_kernel_breakdown(kd);
      if (!b.kernels.empty()) {
        ++breakdowns;
        for (const auto& k : b.kernels) {
          double p = k.contains("percent") ? k["percent"].get<double>() : 0.0;
          if (k["kernel_type"] == "reshape_cache")
            reshape_pct += p;
          else if (k["kernel_type"] == "fwd_kernel")
            fwd_pct += p;
          else if (k["kernel_type"] == "paged_attention")
            paged_pct += p;
        }
      }
    }
    if (auto pp = optional_text(row, "perf_params")) {
      ojson prof = parse_perf_params(pp);
      for (auto [key, acc] :
           {std::pair{"sum_ctx_tokens", &ctx_total}, std::pair{"sum_gen_tokens", &gen_total}}) {
        const ojson& v = prof[key];
        if (v.is_number()) {
          *acc += v.get<double>();
          if (!v.is_number_integer()) ctx_int = false;
        }
      }
    }
  }
  ojson s = ojson::object();
  s["flash_attention_count"] = flash;
  s["paged_attention_count"] = paged;
  int64_t with_model = 0;
  if (ops.col("has_perf_model") >= 0)
    for (double v : column_numbers(ops, "has_perf_model"))
      with_model += std::isnan(v) ? 0 : static_cast<int64_t>(v);
  s["has_perf_model_count"] = with_model;
  s["flash_attention_detected"] = flash > 0;
  s["paged_attention_detected"] = paged > 0;
  merge(s, peak_specs(metadata));
  if (breakdowns > 0) {
    double n = static_cast<double>(breakdowns);
    s["kernel_breakdown_avg"] = {
        {"avg_reshape_cache_percent", pycompat::python_round(reshape_pct / n, 2)},
        {"avg_fwd_kernel_percent", pycompat::python_round(fwd_pct / n, 2)},
        {"avg_paged_attention_percent", pycompat::python_round(paged_pct / n, 2)}};
  }
  double total = ctx_total + gen_total;
  if (total > 0) {
    double ratio = ctx_total / total;
    auto num = [&](double v) { return ctx_int ? ojson(static_cast<int64_t>(v)) : ojson(v); };
    s["workload_profile"] = {{"total_ctx_tokens", num(ctx_total)},
                             {"total_gen_tokens", num(gen_total)},
                             {"ctx_ratio", pycompat::python_round(ratio, 3)},
                             {"profile_type", ratio > 0.8   ? "prefill_heavy"
                                              : ratio < 0.2 ? "decode_heavy"
                                                            : "mixed"}};
  }
  return s;
}

// ---- the kind -> config / category_specific table

CategoryConfig config_for(const std::string& kind) {
  CategoryConfig c;
  c.extra_fields = {"Input Dims", "Input type"};
  if (kind == "gemm") {
    c.extra_fields.push_back("has_perf_model");
    c.classifier = [](const std::string& name, const Row&) {
      bool q = is_quantized_gemm(name);
      return ojson{{"is_quantized", q}, {"gemm_type", q ? "quantized" : "regular"}};
    };
  } else if (kind == "elementwise") {
    c.extra_fields.push_back("FLOPS/Byte");
  } else if (kind == "sdpa") {
    c.extra_fields = {"Input Dims", "Input type", "has_perf_model", "perf_params",
                      "kernel_details_summary"};
    c.classifier = classify_sdpa;
  } else if (kind == "triton") {
    c.classifier = [](const std::string& name, const Row&) {
      return ojson{{"kernel_type", triton_kind(name)}};
    };
  } else if (kind == "other") {
    c.classifier = [](const std::string& name, const Row&) {
      return ojson{{"sub_category", other_kind(name)}};
    };
  }
  return c;
}

ojson category_specific(const std::string& kind, const Table& ops, const ojson& metadata,
                        const ojson& skipped_comm) {
  std::vector<std::string> names = names_of(ops);
  ojson s = ojson::object();
  if (kind == "gemm") {
    int64_t quantized = std::count_if(names.begin(), names.end(), is_quantized_gemm);
    int64_t missing = 0;
    if (ops.col("TFLOPS/s_mean") >= 0)
      for (double v : column_numbers(ops, "TFLOPS/s_mean")) missing += std::isnan(v) ? 1 : 0;
    s["quantized_count"] = quantized;
    s["missing_perf_model_count"] = missing;
    merge(s, peak_specs(metadata));
  } else if (kind == "reduce") {
    s["softmax_count"] = std::count_if(names.begin(), names.end(), [](const std::string& n) {
      return contains(pycompat::ascii_lower(n), "softmax");
    });
    merge(s, peak_hbm_only(metadata));
  } else if (kind == "convolution") {
    std::vector<double> transpose_times;
    int64_t transpose_count = 0;
    for (size_t r = 0; r < ops.rows.size(); ++r)
      if (!is_na(ops.rows[r][static_cast<size_t>(std::max(ops.col("name"), 0))]) &&
          contains(pycompat::ascii_lower(names[r]), "transpose")) {
        ++transpose_count;
        transpose_times.push_back(cell_number(cell_at(ops, r, kKernelSum)));
      }
    ojson t_ms = transpose_count > 0 ? ojson(pycompat::pandas_series_sum(transpose_times) / 1000.0)
                                     : ojson(0);
    double total_ms = ops.col(kKernelSum) >= 0
                          ? pycompat::pandas_series_sum(column_numbers(ops, kKernelSum)) / 1000.0
                          : 0;
    ojson overhead = total_ms > 0 ? ojson(t_ms.get<double>() / total_ms * 100) : ojson(0);
    s["transpose_count"] = transpose_count;
    auto np_json = [](const ojson& v, int n) {
      return v.is_number_float() ? ojson(pycompat::numpy_round(v.get<double>(), n)) : v;
    };
    s["transpose_time_ms"] = np_json(t_ms, 3);
    s["transpose_overhead_percent"] = np_json(overhead, 2);
    merge(s, peak_specs(metadata));
  } else if (kind == "triton") {
    std::map<std::string, int64_t> counts = {
        {"pointwise", 0}, {"reduction", 0}, {"persistent", 0}, {"other", 0}};
    for (const auto& n : names) ++counts[triton_kind(n)];
    for (const char* k : {"pointwise", "reduction", "persistent", "other"})
      s[std::string(k) + "_count"] = counts[k];
    merge(s, peak_specs(metadata));
  } else if (kind == "sdpa") {
    s = sdpa_specific(ops, metadata);
  } else if (kind == "moe") {
    s = peak_specs(metadata);
  } else if (kind == "other") {
    int64_t graph = 0, misc = 0;
    for (const auto& n : names) (other_kind(n) == "graph" ? graph : misc)++;
    s["communication_count"] = 0;
    s["graph_count"] = graph;
    s["miscellaneous_count"] = misc;
    merge(s, peak_specs(metadata));
    if (skipped_comm.is_object() && skipped_comm["count"].get<int64_t>() > 0)
      s["communication_ops_skipped"] = skipped_comm;
  } else {  // elementwise, norm
    s = peak_hbm_only(metadata);
  }
  return s;
}

ojson error_metrics(const std::string& category, const std::string& error, bool with_scope) {
  ojson m = ojson::object();
  m["category"] = category;
  m["status"] = "ERROR";
  m["error"] = error;
  if (with_scope) m["comparison_scope"] = "standalone";
  return m;
}

// Drops the communication rows of the "other" bucket (TraceLens sends them
// to its NCCL analyser) and describes them.
ojson strip_communication(Table& ops) {
  Table kept(ops.name, ops.columns);
  ojson names = ojson::array();
  std::vector<std::string> all = names_of(ops);
  for (size_t r = 0; r < ops.rows.size(); ++r) {
    if (other_kind(all[r]) == "communication")
      names.push_back(all[r]);
    else
      kept.rows.push_back(ops.rows[r]);
  }
  ops = std::move(kept);
  return {{"count", names.size()},
          {"op_names", names},
          {"message",
           "Communication kernels detected. Use TraceLens's NCCL Analyzer for detailed collective "
           "communication analysis (see TraceLens/NcclAnalyser/)."}};
}

ojson compute_metrics(const std::string& output_dir, const std::string& category,
                      const std::string& kind) {
  std::string csv_rel = "category_data/" + category + "_ops.csv";
  std::string csv_path = output_dir + "/" + csv_rel;
  if (kind == "moe" && !fs::exists(csv_path)) {
    ojson m = ojson::object();
    m["category"] = category;
    m["status"] = "NO_DATA";
    m["comparison_scope"] = "standalone";
    m["message"] = "No MoE operations detected in this trace (" + category + " bucket)";
    m["total_time_ms"] = 0;
    m["percent_of_compute"] = 0;
    m["operation_count"] = 0;
    m["operations"] = ojson::array();
    m["category_specific"] = ojson::object();
    return m;
  }
  bool with_scope = kind != "other";
  if (!fs::exists(csv_path))
    return error_metrics(category, "Category CSV not found: " + recorded_path(output_dir, csv_rel),
                         with_scope);
  std::string meta_rel = "metadata/" + category + "_metadata.json";
  if (!fs::exists(output_dir + "/" + meta_rel))
    return error_metrics(category,
                         "Category metadata not found: " + recorded_path(output_dir, meta_rel),
                         with_scope);
  Table ops = read_csv_typed(csv_path);
  ojson metadata = read_json_file(output_dir + "/" + meta_rel);

  ojson skipped;
  if (kind == "other" && category == "other") skipped = strip_communication(ops);

  double total_time_ms_raw = 0;
  ojson total_time_ms = 0, percent_of_compute = 0;
  if (ops.col(kKernelSum) >= 0) {
    total_time_ms_raw = pycompat::pandas_series_sum(column_numbers(ops, kKernelSum)) / 1000.0;
    double compute_ms = 1;
    if (metadata.contains("gpu_utilization") &&
        metadata["gpu_utilization"].contains("total_time_ms"))
      compute_ms = metadata["gpu_utilization"]["total_time_ms"].get<double>();
    total_time_ms = pycompat::numpy_round(total_time_ms_raw, 3);
    percent_of_compute = compute_ms > 0
                             ? ojson(pycompat::numpy_round(total_time_ms_raw / compute_ms * 100, 2))
                             : ojson(0);
  }
  int64_t op_count = static_cast<int64_t>(ops.rows.size());
  if (ops.col("operation_count") >= 0)
    op_count =
        static_cast<int64_t>(pycompat::pandas_series_sum(column_numbers(ops, "operation_count")));

  ojson operations = build_operations(ops, metadata, config_for(kind), output_dir);
  double baseline = 0;
  if (metadata.contains("gpu_utilization") && metadata["gpu_utilization"].contains("total_time_ms"))
    baseline = metadata["gpu_utilization"]["total_time_ms"].get<double>();
  ojson estimates = impact_estimates(operations, category, baseline);

  ojson m = ojson::object();
  m["category"] = category;
  m["status"] = "OK";
  m["comparison_scope"] = "standalone";
  m["total_time_ms"] = total_time_ms;
  m["percent_of_compute"] = percent_of_compute;
  m["operation_count"] = op_count;
  m["operations"] = operations;
  m["category_specific"] = category_specific(kind, ops, metadata, skipped);
  m["impact_estimates"] = estimates;
  m["category_findings"] = category_findings(estimates);
  return m;
}

}  // namespace

namespace detail {

std::vector<size_t> operation_order(const Table& ops) {
  // nlargest: descending, NaN rows dropped, ties keep the earlier row first.
  bool has_kernel = ops.col(kKernelSum) >= 0;
  std::vector<size_t> order;
  for (size_t r = 0; r < ops.rows.size(); ++r)
    if (!has_kernel || !std::isnan(cell_number(cell_at(ops, r, kKernelSum)))) order.push_back(r);
  if (has_kernel)
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return cell_number(cell_at(ops, a, kKernelSum)) > cell_number(cell_at(ops, b, kKernelSum));
    });
  return order;
}

}  // namespace detail

// ------------------------------------------------------------ public API

std::string format_args(const Cell* input_dims, const Cell* input_type) {
  if (!input_dims || !input_type || is_na(*input_dims) || is_na(*input_type)) return "";
  auto dims = try_parse_py_literal(input_dims->to_csv_text(false));
  auto types = try_parse_py_literal(input_type->to_csv_text(false));
  if (!dims || !types || !dims->is_seq() || !types->is_seq()) return "";
  std::string out;
  size_t n = std::min(dims->list.size(), types->list.size());
  for (size_t k = 0; k < n; ++k) {
    const PyValue& dim = dims->list[k];
    const PyValue& dtype = types->list[k];
    std::vector<std::string> shape;
    if (dim.is_seq())
      for (const auto& d : dim.list) shape.push_back(d.str());
    std::string kind;
    if (dtype.truthy()) {
      std::string t = dtype.str();
      kind = torch_dtype_precision(t);
      if (kind.empty()) kind = t;
    }
    if (shape.empty() && (kind.empty() || kind == "Scalar")) continue;
    std::string body;
    for (size_t j = 0; j < shape.size(); ++j) body += (j ? "," : "") + shape[j];
    if (shape.size() == 1) body += ",";
    std::string part = "(" + body + ") " + kind;
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.back()))) part.pop_back();
    out += (out.empty() ? "" : "<br>") + part;
  }
  return out;
}

std::string classify_kernel_library(const std::string& op_name, const std::string& kd) {
  static const std::pair<const char*, const char*> kOpRules[] = {{"aiter::", "AITER"},
                                                                 {"rocm_aiter", "AITER"},
                                                                 {"fbgemm", "FBGEMM"},
                                                                 {"miopen", "MIOpen"},
                                                                 {"triton", "Triton"}};
  static const std::pair<const char*, const char*> kKernelRules[] = {
      {"aiter", "AITER"},
      {"ck_tile::", "CK"},
      {"ck_tile6kentry", "CK"},
      {"FmhaFwd", "CK"},
      {"FmhaBwd", "CK"},
      {"Cijk_", "Tensile"},
      {"wvSplitK", "rocBLAS"},
      {"splitKreduce", "rocBLAS"},
      {"rocprim::", "rocPRIM"},
      {"triton_", "Triton"},
      {"void at::native::", "PyTorch Native"}};
  std::string l = pycompat::ascii_lower(op_name);
  for (const auto& [marker, lib] : kOpRules)
    if (contains(l, marker)) return lib;
  for (const auto& [marker, lib] : kKernelRules)
    if (contains(kd, marker)) return lib;
  return "";
}

std::string analysis_kind(const std::string& c) {
  if (c == "cpu_idle" || c == "multi_kernel" || c == "kernel_fusion") return c;
  if (c == "gemm" || c.starts_with("groupedgemm")) return "gemm";
  if (c.starts_with("sdpa") || c == "inferenceattention") return "sdpa";
  if (c == "elementwise") return "elementwise";
  if (c == "reduce") return "reduce";
  if (c == "norm" || c.starts_with("norm_") || c == "rmsnorm") return "norm";
  if (c == "convolution" || c.starts_with("conv_")) return "convolution";
  if (c == "triton") return "triton";
  if (c == "moe_fused" || c == "moe_unfused") return "moe";
  return "other";
}

void clear_analysis_results(const std::string& output_dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(output_dir) / "category_data", ec)) {
    std::string name = e.path().filename().string();
    if (name.ends_with("_metrics.json") && e.is_regular_file(ec) && !e.is_symlink(ec))
      fs::remove(e.path(), ec);
  }
}

std::vector<std::string> analysis_order(const std::string& output_dir) {
  std::vector<std::string> compute, system = {"cpu_idle"};
  ojson manifest = read_json_file(output_dir + "/category_data/category_manifest.json");
  for (const auto& e : manifest.value("categories", ojson::array())) {
    std::string name = e.value("name", "");
    if (!is_valid_category_name(name)) continue;
    if (e.value("tier", "") == "compute_kernel")
      compute.push_back(name);
    else if (name != "cpu_idle")
      system.push_back(name);
  }
  auto absent = [](const std::vector<std::string>& v, const char* name) {
    return std::find(v.begin(), v.end(), name) == v.end();
  };
  if (absent(compute, "moe_fused")) compute.push_back("moe_fused");
  for (const auto& [name, input] : {std::pair{"multi_kernel", "multi_kernel_data.json"},
                                    std::pair{"kernel_fusion", "fusion_candidates.json"}})
    if (absent(system, name) && fs::exists(output_dir + "/category_data/" + input))
      system.push_back(name);
  compute.insert(compute.end(), system.begin(), system.end());
  return compute;
}

namespace {

// The category's kernel time with each kernel counted once (the direct time
// of ops_summary_by_category), beside TraceLens's total, which sums
// each op's subtree: autocast wrappers count their inner GEMM again, ops
// nested in another category's op count in both. "" when the two agree
// within 0.5 % or the prepared directory has no ops_summary_by_category.
std::string kernel_totals_note(const std::string& output_dir, const std::string& category,
                               const ojson& metrics) {
  const std::string by_category = output_dir + "/perf_report_csvs/ops_summary_by_category.csv";
  std::error_code ec;
  if (!metrics.contains("total_time_ms") || !metrics["total_time_ms"].is_number() ||
      !fs::is_regular_file(by_category, ec))
    return "";
  const auto direct = direct_kernel_time_ms_by_key(read_csv_typed(by_category));
  auto it = direct.find(category);
  if (it == direct.end()) return "";
  const double tracelens_ms = metrics["total_time_ms"].get<double>(), direct_ms = it->second;
  if (std::fabs(direct_ms - tracelens_ms) <= 0.005 * std::max(direct_ms, tracelens_ms)) return "";
  return fmt::format(
      "- Each kernel counted once: {:.3f} ms (kernels launched by this category's own ops, "
      "ops_summary_by_category; the total above is TraceLens's, each op's whole subtree: an "
      "autocast wrapper counts its casts and inner GEMM again, an op nested in another "
      "category's op counts in both)\n",
      direct_ms);
}

}  // namespace

AnalyzeResult analyze_category(const std::string& output_dir, const std::string& category) {
  if (!is_valid_category_name(category))
    throw std::invalid_argument("bad category name '" + category +
                                "' (expected lower-case letters, digits and _)");
  if (!fs::is_directory(output_dir))
    throw std::invalid_argument("output directory '" + output_dir + "' does not exist");
  AnalyzeResult res;
  res.category = category;
  res.kind = analysis_kind(category);
  if (res.kind == "cpu_idle")
    res.metrics = detail::cpu_idle_metrics(output_dir);
  else if (res.kind == "multi_kernel")
    res.metrics = detail::multi_kernel_metrics(output_dir);
  else if (res.kind == "kernel_fusion")
    res.metrics = detail::kernel_fusion_metrics(output_dir);
  else
    res.metrics = compute_metrics(output_dir, category, res.kind);
  res.status = res.metrics.value("status", "");
  res.metrics_path = output_dir + "/category_data/" + category + "_metrics.json";
  write_json_atomic(res.metrics_path, res.metrics);
  bool system = res.kind == "cpu_idle" || res.kind == "multi_kernel" || res.kind == "kernel_fusion";
  if (res.kind == "cpu_idle") res.idle = prepared_idle(output_dir);
  res.markdown = system ? detail::system_markdown(category, res.metrics, res.idle)
                        : detail::compute_markdown(res.metrics);
  if (!system && res.status == "OK") {
    // Right after the "- Total kernel time" line: which total is which.
    std::string note = kernel_totals_note(output_dir, category, res.metrics);
    size_t line = res.markdown.find("- Total kernel time:");
    if (!note.empty() && line != std::string::npos)
      res.markdown.insert(res.markdown.find('\n', line) + 1, note);
    res.regimes = category_regimes(output_dir, category);
    res.markdown += regimes_markdown(res.regimes);
  }
  res.insights = category_insights(output_dir, category);
  res.markdown += insights_markdown(res.insights);
  return res;
}

}  // namespace jarvis::analysis
