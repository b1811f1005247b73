// Markdown digests of the metrics files: what TraceLens's analysis scripts
// print for their sub-agent (operations breakdown, flagged bottlenecks, key
// metrics), rendered from the metrics JSON so the two never disagree.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "categories/category_analysis_internal.h"

namespace jarvis::analysis::detail {

namespace {

constexpr size_t kMaxRows = 25;
// Near-identical rows merge into one digest line from this many on.
constexpr size_t kMinCollapse = 4;

std::string num_text(const ojson& v, int digits) {
  if (!v.is_number()) return "\xE2\x80\x94";  // em dash
  return fixed(v.get<double>(), digits);
}

std::string str_or_dash(const ojson& v) {
  if (v.is_string() && !v.get<std::string>().empty()) return v.get<std::string>();
  return "\xE2\x80\x94";
}

// Keeps a markdown table cell on one line.
std::string cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string efficiency_text(const ojson& eff) {
  if (!eff.is_object() || !eff["efficiency_percent"].is_number()) return "\xE2\x80\x94";
  std::string pct = fixed(eff["efficiency_percent"].get<double>(), 2) + "%";
  if (eff["bound_type"] == "compute" && eff["resolved_peak_maf"].is_number())
    return pct + " of " + num_text(eff["resolved_peak_maf"], 0) + " TFLOPS";
  if (eff["bound_type"] == "memory" && eff["resolved_peak_hbm_bw"].is_number())
    return pct + " of " + num_text(eff["resolved_peak_hbm_bw"], 2) + " TB/s";
  return pct;
}

std::string flat_value(const ojson& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return fixed(v.get<double>(), 3);
  return v.dump();
}

// The args of an operations[] row with the batch and sequence dimensions of
// each shape written `*`: the first dimension of a 2-D or larger shape, and
// for 3-D or larger also the second-to-last (the sequence of (B, H, S, D)
// attention tensors). "(8944,1024) bf16<br>(1024,2816) bf16" ->
// "(*,1024) bf16<br>(*,2816) bf16"; "(32,8,117,128)" -> "(*,8,*,128)".
std::string shape_signature(const std::string& args) {
  std::string out;
  size_t k = 0;
  while (k < args.size()) {
    if (args[k] != '(') {
      out += args[k++];
      continue;
    }
    size_t close = args.find(')', k);
    if (close == std::string::npos) {
      out += args.substr(k);
      break;
    }
    std::string inner = args.substr(k + 1, close - k - 1);
    while (!inner.empty() && (inner.back() == ',' || inner.back() == ' ')) inner.pop_back();
    bool numeric = !inner.empty() && inner.find_first_not_of("0123456789, ") == std::string::npos;
    std::vector<std::string> dims;
    for (size_t start = 0; numeric;) {
      size_t comma = inner.find(',', start);
      dims.push_back(inner.substr(start, comma == std::string::npos ? comma : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (dims.size() < 2) {
      out += args.substr(k, close - k + 1);
    } else {
      out += '(';
      for (size_t d = 0; d < dims.size(); ++d) {
        if (d > 0) out += ',';
        bool batch_or_sequence = d == 0 || (dims.size() >= 3 && d == dims.size() - 2);
        if (batch_or_sequence)
          out += '*';
        else
          out += dims[d];
      }
      out += ")";
    }
    k = close + 1;
  }
  return out;
}

}  // namespace

std::string compute_markdown(const ojson& m) {
  std::string cat = m.value("category", "?");
  std::string out = "# " + cat + " analysis\n\n";
  std::string status = m.value("status", "");
  if (status != "OK") {
    out += "Status: " + status + "\n\n";
    if (m.contains("error")) out += "Error: " + m["error"].get<std::string>() + "\n";
    if (m.contains("message")) out += m["message"].get<std::string>() + "\n";
    return out;
  }
  out += "- Total kernel time: " + num_text(m["total_time_ms"], 3) + " ms (" +
         num_text(m["percent_of_compute"], 2) + "% of end-to-end GPU time)\n";
  out += "- Operations: " + std::to_string(m["operation_count"].get<int64_t>()) + " calls in " +
         std::to_string(m["operations"].size()) + " distinct (op, shape) rows\n\n";

  out += "## Operations breakdown\n\n";
  out +=
      "| # | Operation | Args | Count | Time (ms) | % of category | % E2E | FLOPS/Byte | "
      "Efficiency | Bound | Library |\n";
  out += "|---|---|---|---|---|---|---|---|---|---|---|\n";
  // Near-identical rows (same op, same shapes up to the batch / sequence
  // dimensions: decode attention over growing KV lengths), when there are at
  // least kMinCollapse of them, collapse into one line with their count at the
  // place of the largest; the metrics JSON keeps every row.
  std::map<std::string, std::vector<const ojson*>> groups;
  auto key_of = [](const ojson& op) {
    return op["name"].get<std::string>() + "\x1f" + shape_signature(op.value("args", ""));
  };
  for (const auto& op : m["operations"]) groups[key_of(op)].push_back(&op);
  size_t k = 0, lines = 0, merged_rows = 0;
  for (const auto& op : m["operations"]) {
    const std::vector<const ojson*>& group = groups[key_of(op)];
    bool collapse = group.size() >= kMinCollapse;
    if (collapse && group.front() != &op) continue;  // shown on its group's line
    ++lines;
    if (collapse) merged_rows += group.size();
    if (++k > kMaxRows) continue;
    const ojson& eff = op["efficiency"];
    if (!collapse) {
      out += "| " + std::to_string(k) + " | " + cell(op["name"].get<std::string>()) + " | " +
             cell(op.value("args", "")) + " | " + std::to_string(op["count"].get<int64_t>()) +
             " | " + num_text(op["time_ms"], 3) + " | " + num_text(op["percent_of_category"], 2) +
             " | " + num_text(op["percent_of_total"], 2) + " | " +
             num_text(eff["flops_per_byte"], 2) + " | " + efficiency_text(eff) + " | " +
             str_or_dash(eff["bound_type"]) + " | " + str_or_dash(op["library"]) + " |\n";
      continue;
    }
    int64_t count = 0;
    double time = 0, pct_cat = 0, pct_total = 0;
    std::optional<double> eff_min, eff_max;
    for (const ojson* o : group) {
      count += (*o)["count"].get<int64_t>();
      auto add = [](double& sum, const ojson& v) {
        if (v.is_number()) sum += v.get<double>();
      };
      add(time, (*o)["time_ms"]);
      add(pct_cat, (*o)["percent_of_category"]);
      add(pct_total, (*o)["percent_of_total"]);
      const ojson& e = (*o)["efficiency"];
      if (e.is_object() && e["efficiency_percent"].is_number()) {
        double v = e["efficiency_percent"].get<double>();
        eff_min = eff_min ? std::min(*eff_min, v) : v;
        eff_max = eff_max ? std::max(*eff_max, v) : v;
      }
    }
    std::string eff_range =
        eff_min ? fixed(*eff_min, 2) + "\xE2\x80\x93" + fixed(*eff_max, 2) + "%" : "\xE2\x80\x94";
    out += "| " + std::to_string(k) + " | " + cell(op["name"].get<std::string>()) + " | " +
           cell(shape_signature(op.value("args", ""))) + " (" + std::to_string(group.size()) +
           " near-identical rows, largest " + cell(op.value("args", "")) + ") | " +
           std::to_string(count) + " | " + fixed(time, 3) + " | " + fixed(pct_cat, 2) + " | " +
           fixed(pct_total, 2) + " | " + num_text(eff["flops_per_byte"], 2) + " | " + eff_range +
           " | " + str_or_dash(eff["bound_type"]) + " | " + str_or_dash(op["library"]) + " |\n";
  }
  if (lines > kMaxRows)
    out +=
        "\n(" + std::to_string(lines - kMaxRows) + " smaller rows omitted; see the metrics JSON)\n";
  if (merged_rows > 0)
    out += "\n(" + std::to_string(m["operations"].size()) + " (op, shape) rows shown as " +
           std::to_string(lines) + ": " + std::to_string(merged_rows) +
           " rows differing only in batch / sequence dimensions are merged)\n";

  out += "\n## Potential bottlenecks (flagged by rule)\n\n";
  const ojson& findings = m["category_findings"];
  if (findings.empty()) {
    out += "No group of operations reaches the 0.5 % end-to-end impact threshold.\n";
  } else {
    for (const auto& f : findings) {
      out += "### P" + std::to_string(f["rank"].get<int64_t>()) + ": " +
             f["bound_type"].get<std::string>() + "-bound, " + f["library"].get<std::string>() +
             ", efficiency bucket " + f["eff_bucket"].get<std::string>() + "\n\n";
      out += "- Estimated impact: " + num_text(f["impact_score"], 2) + " % of E2E (range " +
             num_text(f["impact_score_low"], 2) + "\xE2\x80\x93" +
             num_text(f["impact_score_high"], 2) + "), method " +
             f["estimate_method"].get<std::string>() + "\n";
      for (const auto& mem : f["members"])
        out += "  - " + mem["operation"].get<std::string>() + ": " + num_text(mem["time_ms"], 3) +
               " ms, efficiency " + num_text(mem["efficiency_pct"], 2) + " %, impact " +
               num_text(mem["impact_score"], 2) + "\n";
      out += "\n";
    }
  }
  bool any_warning = false;
  for (const auto& op : m["operations"])
    if (op.contains("efficiency_warning") || op.value("high_variance", false)) {
      if (!any_warning) out += "\n### Anomalies\n\n";
      any_warning = true;
      if (op.contains("efficiency_warning"))
        out += "- " + op["name"].get<std::string>() + ": " +
               op["efficiency_warning"].get<std::string>() + "\n";
      if (op.value("high_variance", false))
        out += "- " + op["name"].get<std::string>() + ": kernel-time coefficient of variation " +
               num_text(op["cov"], 3) + " (> 1.0)\n";
    }

  out += "\n## Key metrics\n\n";
  for (const auto& [key, value] : m["category_specific"].items())
    out += "- " + key + ": " + flat_value(value) + "\n";
  return out;
}

std::string system_markdown(const std::string& category, const ojson& m, const ojson& idle) {
  std::string out = "# " + category + " analysis\n\nStatus: " + m.value("status", "") + "\n\n";
  if (m.contains("error")) return out + "Error: " + m["error"].get<std::string>() + "\n";
  if (category == "cpu_idle") {
    const ojson& u = m["gpu_utilization"];
    out += "- Total time: " + num_text(u["total_time_ms"], 3) + " ms\n";
    // TraceLens's gpu_timeline counts the GPU events linked to a launch; the
    // idle analysis below counts every GPU event: each line says which.
    out += "- Idle (TraceLens's gpu_timeline, GPU events linked to a launch): " +
           num_text(u["idle_time_ms"], 3) + " ms (" + num_text(u["idle_time_percent"], 2) + " %)" +
           (m["idle_flagged"].get<bool>() ? " \xE2\x80\x94 FLAGGED (> 15 %)" : "") + "\n";
    out += "- Computation: " + num_text(u["computation_percent"], 2) +
           " %, exposed "
           "communication: " +
           num_text(u["communication_percent"], 2) +
           " %, exposed memcpy: " + num_text(u["memcpy_percent"], 2) + " %\n";
    if (idle.is_object()) return out + idle_markdown(idle);
    // TraceLens counts from ops_summary columns its own ops_summary lacks
    // (0 on every trace); prepared_idle counts the kernel events.
    const ojson& k = m["kernel_analysis"];
    out += "- Kernels (TraceLens's ops_summary count): " + k["total_kernel_count"].dump() +
           " (short < 10 us: " + k["short_kernel_count"].dump() + ")\n";
  } else if (category == "multi_kernel") {
    out += "- Memcpy: " + m["memcpy_summary"]["total_count"].dump() + " transfers, " +
           num_text(m["memcpy_summary"]["total_time_ms"], 3) + " ms\n";
    out += "- Communication: " + m["nccl_summary"]["total_count"].dump() + " kernels, " +
           num_text(m["nccl_summary"]["total_time_ms"], 3) + " ms\n";
    out += "- Patterns detected: " + std::to_string(m["patterns_detected"].size()) + "\n";
    for (const auto& p : m["patterns_detected"])
      out += "  - " + p["pattern"].get<std::string>() + ": " + p["description"].get<std::string>() +
             "\n";
    if (m["cross_validation"].is_object())
      out += "- Cross-check against gpu_timeline: " +
             m["cross_validation"]["status"].get<std::string>() + "\n";
  } else if (category == "kernel_fusion") {
    // candidate_count counts every kept candidate; impact_estimates (the
    // table) only those with modeled kernel time: say both, so the count and
    // the list agree.
    const ojson kept = m.value("candidate_count", ojson(0));
    const size_t listed = m.contains("impact_estimates") ? m["impact_estimates"].size() : 0;
    out += "- Candidates kept: " + kept.dump() + " (" + std::to_string(listed) +
           " with an impact estimate, listed below";
    if (kept.is_number() && kept.get<double>() > static_cast<double>(listed))
      out += "; " + std::to_string(static_cast<size_t>(kept.get<double>()) - listed) +
             " without an impact estimate (category_data/fusion_candidates.json lists every "
             "candidate)";
    out += ")\n";
    if (m.contains("impact_estimates") && !m["impact_estimates"].empty()) {
      out +=
          "\n| Candidate | Instances | Kernels | Time (ms) | Impact % E2E | Confidence | Bound |\n";
      out += "|---|---|---|---|---|---|---|\n";
      for (const auto& e : m["impact_estimates"])
        out += "| " + cell(e["operation"].get<std::string>()) + " | " + e["instance_count"].dump() +
               " | " + e["kernel_count"].dump() + " | " + num_text(e["time_ms"], 3) + " | " +
               num_text(e["impact_score"], 2) + " (" + num_text(e["impact_score_low"], 2) +
               "\xE2\x80\x93" + num_text(e["impact_score_high"], 2) + ") | " +
               e["confidence"].get<std::string>() + " | " + e["bound_type"].get<std::string>() +
               " |\n";
    }
  }
  return out;
}

}  // namespace jarvis::analysis::detail
