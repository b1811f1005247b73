#include "categories/findings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "categories/category_analysis.h"
#include "categories/category_analysis_internal.h"
#include "categories/category_insights.h"
#include "categories/op_regimes.h"
#include "explore/gemm_roofline.h"

namespace jarvis::analysis {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxFindingsBytes = 1 << 20;

bool is_system(const std::string& c) {
  return c == "cpu_idle" || c == "multi_kernel" || c == "kernel_fusion";
}

std::string f2(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::optional<double> opt(const ojson& v) {
  if (v.is_number()) return v.get<double>();
  return std::nullopt;
}

std::string issue_text(const std::string& kind, const ojson& op, std::optional<double> eff,
                       const std::string& bound) {
  int64_t count = op.value("count", int64_t{0});
  if (!eff)
    return "No perf model: efficiency cannot be judged from the trace; time share alone flags it.";
  std::string base = bound.empty() ? "" : bound + "-bound, ";
  if (kind == "gemm" && op.contains("Input Dims")) {
    // Tiny batched GEMMs are expected to be inefficient.
    auto dims = try_parse_py_literal(op["Input Dims"].get<std::string>());
    if (dims && dims->is_seq() && dims->list.size() >= 2 && dims->list[0].is_seq() &&
        dims->list[1].is_seq() && !dims->list[0].list.empty() && !dims->list[1].list.empty()) {
      const auto& a = dims->list[0].list;
      const auto& b = dims->list[1].list;
      double m = a.size() >= 2 ? a[a.size() - 2].as_double() : 1, k = a.back().as_double(),
             n = b.back().as_double();
      if (gemm_batching_pattern(m, n, k, a.size() > 2 ? a[0].as_double() : 1,
                                static_cast<double>(count)))
        return base + "tiny batched GEMM shape: low parallelism per launch (batching opportunity)";
    }
  }
  if (*eff < 40) return base + "runs well below the roofline (" + f2(*eff) + "% of peak)";
  if (*eff < 60) return base + "acceptable but improvable efficiency (" + f2(*eff) + "% of peak)";
  if (count > 1000)
    return base + "efficient kernel, but " + std::to_string(count) + " launches add overhead";
  return base + "near the roofline (" + f2(*eff) + "% of peak); gains need algorithmic changes";
}

std::pair<std::string, std::string> paths(const std::string& kind, const std::string& bound) {
  if (kind == "gemm")
    return {bound == "memory"
                ? "Fuse producers/consumers or quantize (FP8/W8A8) to cut memory traffic; "
                  "batch small GEMMs (bmm / grouped GEMM, torch.compile)."
                : "Batch or merge GEMMs sharing an input (e.g. fused QKV / gate-up projections).",
            "Generate a replay artifact for the kernel team: tile-size tuning / better kernel "
            "selection "
            "for this M/N/K and dtype."};
  if (kind == "sdpa")
    return {"Use a fused flash-attention path for this shape (check causal / head-dim support).",
            "Replay the attention shape and tune the fused attention kernel (sequence length, head "
            "dim)."};
  if (kind == "elementwise" || kind == "norm" || kind == "reduce" || kind == "triton")
    return {
        "Fuse the surrounding elementwise / normalization chain (torch.compile or a fused kernel) "
        "to remove memory round trips.",
        "Compare achieved TB/s with simple ops (add, mul, copy) in the same trace; if far below, "
        "replay the op for kernel tuning."};
  if (kind == "convolution")
    return {"Use channels_last to avoid layout transposes; fuse conv + bias + activation.",
            "Replay the convolution shape and check the selected MIOpen / cuDNN algorithm."};
  return {"Check whether the op is needed or can be fused with its neighbours.",
          "Replay the op to profile the kernel with rocprof / nsight-compute."};
}

std::string priority_for(double pct, std::optional<double> eff, bool batching) {
  return gemm_priority(pct, eff, batching);
}

// The entry of `list` made for operation `op` (same name and time).
const ojson* estimate_for(const ojson& list, const ojson& op) {
  if (!list.is_array()) return nullptr;
  for (const auto& e : list)
    if (e["operation"] == op["name"] && e["time_ms"].is_number() &&
        std::abs(e["time_ms"].get<double>() - op["time_ms"].get<double>()) <= 5e-4)
      return &e;
  return nullptr;
}

// "- **Impact estimate:** ..." for one bottleneck, naming the method.
std::string impact_line(const ojson& metrics, const ojson& what_if, const ojson& op) {
  const ojson* w = what_if.contains("estimates") ? estimate_for(what_if["estimates"], op) : nullptr;
  if (w && (*w)["method"] == "what_if")
    return "- **Impact estimate:** " + f2((*w)["impact_low_pct"].get<double>()) + "-" +
           f2((*w)["impact_high_pct"].get<double>()) +
           "% of the step time (what-if on the critical-path graph: its " +
           std::to_string((*w)["kernels"].get<int64_t>()) +
           " kernels at the efficiency target save " + f2((*w)["saving_low_us"].get<double>()) +
           "-" + f2((*w)["saving_high_us"].get<double>()) + " us of " +
           f2(what_if["step_time_us"].get<double>()) + " us)\n";
  const ojson* e = estimate_for(metrics["impact_estimates"], op);
  if (!e) return "";
  std::string why = w && w->contains("reason")   ? (*w)["reason"].get<std::string>()
                    : what_if.contains("reason") ? what_if["reason"].get<std::string>()
                                                 : "";
  return "- **Impact estimate:** " + f2((*e)["impact_score_low"].get<double>()) + "-" +
         f2((*e)["impact_score_high"].get<double>()) + "% of GPU time (trace time share" +
         (why.empty() ? "" : "; " + why) + ")\n";
}

// `<!-- what-if-saving pct=X -->`: the step-time share the P-item's ops save
// at their efficiency target on the dependency graph (each member's what-if,
// summed), the cap final_report puts on its ranking value so the ranking
// never promises what the what-if says the step cannot give back (a GEMM
// hidden behind a host that runs ahead saves nothing). "" when no member
// has a what-if prediction.
std::string what_if_marker(const ojson& what_if, const std::vector<const ojson*>& members) {
  if (!what_if.contains("estimates")) return "";
  double pct = 0;
  size_t predicted = 0;
  for (const ojson* op : members) {
    const ojson* w = estimate_for(what_if["estimates"], *op);
    if (!w || (*w)["method"] != "what_if" || !(*w)["impact_high_pct"].is_number()) continue;
    pct += (*w)["impact_high_pct"].get<double>();
    ++predicted;
  }
  if (predicted == 0 || predicted < members.size()) return "";  // a partial sum caps nothing
  return "<!-- what-if-saving pct=" + fmt::format("{:.4f}", std::max(0.0, pct)) + " -->\n";
}

// The operations[] row of a category_findings member (same name and time).
const ojson* member_op(const ojson& ops, const ojson& member) {
  const ojson* by_name = nullptr;
  for (const auto& op : ops) {
    if (op["name"] != member["operation"]) continue;
    if (op["time_ms"].is_number() && member["time_ms"].is_number() &&
        std::fabs(op["time_ms"].get<double>() - member["time_ms"].get<double>()) < 1e-9)
      return &op;
    if (!by_name) by_name = &op;
  }
  return by_name;
}

std::string markdown_cell(const ojson& v) {
  if (v.is_null() || (v.is_string() && v.get<std::string>().empty())) return "\u2014";
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  std::replace(s.begin(), s.end(), '|', '/');
  return s;
}

std::string data_table_header() {
  return "| Operation | Args | Kernel Path | Kernel Name | Time (ms) | %E2E | Count | FLOPS/Byte | "
         "Efficiency | Bound |\n|---|---|---|---|---|---|---|---|---|---|\n";
}

// One Data row from an operations[] entry (TraceLens's cell sources).
std::string data_table_row(const ojson& op) {
  const ojson& eff = op["efficiency"];
  std::string bound =
      eff.is_object() && eff["bound_type"].is_string() ? eff["bound_type"].get<std::string>() : "";
  std::string efficiency = "\u2014";
  if (eff.is_object() && eff["efficiency_percent"].is_number()) {
    bool memory = bound == "memory";
    const ojson& peak = memory ? eff["resolved_peak_hbm_bw"] : eff["resolved_peak_maf"];
    efficiency = f2(eff["efficiency_percent"].get<double>()) + "% of " + markdown_cell(peak) +
                 (memory ? " TB/s" : " TFLOPS");
  }
  auto field = [&](const char* key) {
    return op.contains(key) ? markdown_cell(op[key]) : "\u2014";
  };
  return "| " + field("name") + " | " + field("args") + " | " + field("launcher_path") + " | " +
         field("kernel_name_trunc") + " | " + field("time_ms") + " | " + field("percent_of_total") +
         " | " + field("count") + " | " +
         (eff.is_object() && eff.contains("flops_per_byte") ? markdown_cell(eff["flops_per_byte"])
                                                            : "\u2014") +
         " | " + efficiency + " | " + (bound.empty() ? "\u2014" : bound + "-bound") + " |\n";
}
}  // namespace

std::string findings_path(const std::string& output_dir, const std::string& category) {
  std::string sub = is_system(category) ? "system_findings" : "category_findings";
  return output_dir + "/" + sub + "/" + category + "_findings.md";
}

std::string write_findings(const std::string& output_dir, const std::string& category,
                           const std::string& markdown) {
  if (!is_valid_category_name(category))
    throw std::invalid_argument(
        "bad category name '" + category +
        "': use the manifest's category key (lower-case letters, digits, _)");
  if (!fs::is_directory(output_dir))
    throw std::invalid_argument("output directory '" + output_dir + "' does not exist");
  if (markdown.find_first_not_of(" \t\r\n") == std::string::npos)
    throw std::invalid_argument("findings markdown is empty");
  if (markdown.size() > kMaxFindingsBytes)
    throw std::invalid_argument("findings markdown is larger than 1 MiB");
  std::string path = findings_path(output_dir, category);
  fs::create_directories(fs::path(path).parent_path());
  fs::path root = fs::canonical(output_dir);
  fs::path dir = fs::canonical(fs::path(path).parent_path());
  auto rel = dir.lexically_relative(root);
  if (rel.empty() || rel.native().starts_with(".."))
    throw std::invalid_argument("findings directory resolves outside the output directory");
  if (fs::is_symlink(path)) throw std::invalid_argument("refusing to overwrite a symlink: " + path);
  write_file_atomic(path, markdown);
  return path;
}

namespace {

// "- **Regime:** ..." of a P-item's member ops (categories/op_regimes.h),
// ending in a `<!-- tuning-headroom pct=X -->` marker final_report ranks by;
// "" without regimes or a latency floor.
std::string regime_line(const ojson& regimes, const std::vector<const ojson*>& members) {
  if (!regimes.is_object() || !(regimes["latency_floor_us"].get<double>() > 0)) return "";
  size_t latency = 0, known = 0;
  double latency_ms = 0, headroom_ms = 0;
  std::string regime;
  for (const ojson* op : members) {
    const ojson* e = regime_of_op(regimes, *op);
    if (!e || !(*e)["tuning_headroom_ms"].is_number()) continue;
    ++known;
    headroom_ms += (*e)["tuning_headroom_ms"].get<double>();
    if (regime.empty()) regime = (*e)["regime"].get<std::string>();
    if ((*e)["regime"] == "latency-bound") {
      ++latency;
      latency_ms += (*e)["time_ms"].get<double>();
    }
  }
  if (known == 0) return "";
  double floor_us = regimes["latency_floor_us"].get<double>();
  double e2e_ms = regimes["e2e_ms"].get<double>();
  std::string headroom = f2(headroom_ms) + " ms over the whole trace";
  std::string marker;
  if (e2e_ms > 0) {
    double pct = headroom_ms / e2e_ms * 100;
    headroom += " (" + f2(pct) + " % of end-to-end time)";
    marker = " <!-- tuning-headroom pct=" + fmt::format("{:.4f}", pct) + " -->";
  }
  std::string line = "- **Regime:** ";
  if (latency == known)
    line += "latency-bound: the roofline time per call is below this trace's " + f2(floor_us) +
            " us kernel latency floor, so kernel tuning saves at most " + headroom +
            "; launch fewer kernels instead (fuse with neighbours, CUDA/HIP graphs, "
            "torch.compile, a larger batch).";
  else if (latency > 0)
    line += std::to_string(latency) + " of " + std::to_string(known) + " ops latency-bound (" +
            f2(latency_ms) + " ms below the " + f2(floor_us) +
            " us kernel latency floor); kernel tuning saves at most " + headroom + ".";
  else
    line += regime + " (roofline above the " + f2(floor_us) +
            " us kernel latency floor): kernel tuning saves at most " + headroom +
            " if every op reached its roofline.";
  return line + marker + "\n";
}

// The trace-level insights a system draft turns into P-items: those with a
// step saving (the what-if on the un-profiled step insights ranks by), most
// first (issue 73 point 10: a host-bound step is a recommendation of the
// final report, ranked with the kernel ones).
std::vector<const ojson*> step_saving_insights(const ojson& insights) {
  std::vector<const ojson*> out;
  if (!insights.is_array()) return out;
  for (const auto& i : insights)
    if (i.is_object() && i.value("scope", std::string()) == "trace" &&
        i.contains("step_saving_us_total") && i["step_saving_us_total"].is_number() &&
        i["step_saving_us_total"].get<double>() > 0)
      out.push_back(&i);
  std::stable_sort(out.begin(), out.end(), [](const ojson* a, const ojson* b) {
    return (*a)["step_saving_us_total"].get<double>() > (*b)["step_saving_us_total"].get<double>();
  });
  return out;
}

// A system category's draft: the analysis digest as the overview (with the
// idle analysis where prepare left one: the digest the analysis itself shows,
// so the draft's figures are the analysis's); one P-item per trace-level
// insight with a step saving (system tier: impact null; the saving in a
// `<!-- step-saving us_total=X -->` marker final_report ranks by); other
// P-items are the agent's to write.
std::string system_draft(const std::string& out, const std::string& cat, const ojson& m,
                         const ojson& idle, const ojson& insights) {
  std::string digest = detail::system_markdown(cat, m, idle);
  if (digest.starts_with("# ")) digest.erase(0, digest.find('\n') + 1);
  const std::vector<const ojson*> items = step_saving_insights(insights);
  if (items.empty())
    return out + "## Overview\n" + digest +
           "\n## Recommendations\n\nNo P-item drafted: system recommendations are written "
           "from the data above (tier=system, impact low=null mid=null high=null).\n\n"
           "## Detailed Analysis\n\n";
  std::string recs, details;
  size_t number = 0;
  for (const ojson* i : items) {
    ++number;
    const std::string rule = i->value("rule", std::string());
    std::string title = i->value("title", std::string());
    std::replace(title.begin(), title.end(), '\n', ' ');
    const double total_us = (*i)["step_saving_us_total"].get<double>();
    const double per_step_us = i->value("step_saving_us_per_step", total_us);
    const int64_t steps = i->value("steps", static_cast<int64_t>(1));
    const std::string saving = fmt::format(
        "{} ms per step, {} ms over {} step(s) (the what-if on the un-profiled step, as insights "
        "ranks it; {})",
        f2(per_step_us / 1e3), f2(total_us / 1e3), steps, i->value("recoverable_method", ""));
    const std::string path_a = i->value("action_model", std::string());
    const std::string path_b = i->value("action_kernel", std::string());
    recs += fmt::format("### P{}: {}: {}\n", number, rule, title);
    recs += "- **Step saving:** " + saving + "\n";
    recs += "- **Path A:** " + path_a + "\n- **Path B:** " + path_b + "\n";
    recs += fmt::format("<!-- step-saving us_total={:.4f} -->\n\n", total_us);
    recs += "**Insight**: " + title + ".\n";
    recs += "**Action**: Path A: " + path_a + " Path B: " + path_b + "\n";
    recs += "<!-- impact-begin kind=p_item low=null mid=null high=null -->\n";
    recs += "**Impact**: a system finding (no share of kernel time): its step saving, " +
            f2(total_us / 1e3) + " ms over the trace, ranks it in the final report\n";
    recs += "<!-- impact-end -->\n\n";
    details += fmt::format("<!-- reasoning-candidate tier=system rank={} -->\n", number);
    details += "#### " + title + "\n";
    details += fmt::format(
        "**Identification:** insights rule {} (category_data/insights.json), severity {}.\n", rule,
        i->value("severity", std::string()));
    details += "**Data:** " + i->value("detail", std::string()) + "\n";
    details += "**Reasoning for Slowdown:** " + i->value("detail", std::string()) + "\n";
    details += "**Resolution:** Path A: " + path_a + " Path B: " + path_b + "\n";
    details += "**Impact estimate:** " + saving + "\n\n";
  }
  return out + "## Overview\n" + digest + "\n## Recommendations\n\n" + recs +
         "## Detailed Analysis\n\n" + details;
}

// The draft of a category's metrics; `idle` (cpu_idle's prepared idle
// analysis, or null) goes into a system category's digest.
std::string draft(const std::string& cat, const ojson& m, const std::string& display,
                  const ojson& what_if, const ojson& regimes, const ojson& idle,
                  const ojson& insights) {
  std::string name = display.empty() ? cat : display;
  std::string out = "# " + name + " Analysis Summary\n\n";
  std::string status = m.value("status", std::string());
  if (is_system(cat) && status != "ERROR") return system_draft(out, cat, m, idle, insights);
  if (status != "OK") {
    // A failed analysis is recorded as such (TraceLens counts the file as
    // failed); missing data keeps both sections, empty.
    out += status == "ERROR" ? "Status: ERROR\n\n" : "";
    out += "## Overview\nNo analysis data (status " + status + ").";
    if (m.contains("error")) out += " " + m["error"].get<std::string>();
    if (m.contains("message")) out += " " + m["message"].get<std::string>();
    if (status == "ERROR") return out + "\n";
    return out + "\n\n## Recommendations\n\n## Detailed Analysis\n\n";
  }
  std::string kind = analysis_kind(cat);
  const ojson& ops = m["operations"];
  double weighted = 0, weight = 0;
  for (const auto& op : ops)
    if (auto e = opt(op["efficiency"]["efficiency_percent"])) {
      weighted += *e * op["time_ms"].get<double>();
      weight += op["time_ms"].get<double>();
    }
  out += "## Overview\n" + name + " accounts for " + f2(m["percent_of_compute"].get<double>()) +
         "% of GPU time (" + f2(m["total_time_ms"].get<double>()) + " ms over " +
         std::to_string(m["operation_count"].get<int64_t>()) + " calls, " +
         std::to_string(ops.size()) + " distinct shapes). ";
  out += weight > 0 ? "Time-weighted roofline efficiency of modeled ops: " + f2(weighted / weight) +
                          "%.\n\n"
                    : "No op of this category has a perf model.\n\n";

  // Recommendations: one P-item per category_findings group, in rank order,
  // the structure TraceLens's validator expects (findings_check.h).
  out += "## Recommendations\n\n";
  const ojson& groups_list = m["category_findings"];
  std::string details;
  size_t number = 0;
  for (const auto& f : groups_list) {
    ++number;
    const ojson* top = nullptr;
    std::vector<const ojson*> members;
    for (const auto& mem : f["members"]) {
      const ojson* match = member_op(ops, mem);
      if (match) members.push_back(match);
      if (!top && match) top = match;
    }
    std::string bound = f.value("bound_type", std::string());
    std::string title = top ? (*top)["name"].get<std::string>() : std::string("operations");
    if (top && top->contains("args")) title += " " + (*top)["args"].get<std::string>();
    title += ": " + bound + "-bound at " + f.value("eff_bucket", std::string("?")) + "% efficiency";
    if (f["member_count"].get<int64_t>() > 1)
      title += " (" + std::to_string(f["member_count"].get<int64_t>()) + " ops)";
    std::string library = f["library"].is_string() ? f["library"].get<std::string>() : "Unknown";
    if (library != "Unknown" && !library.empty()) title += " (" + library + ")";
    out += "### P" + std::to_string(number) + ": " + title + "\n";
    std::string issue = "see the metrics";
    std::string path_a, path_b;
    std::tie(path_a, path_b) = paths(kind, bound);
    if (top) {
      const ojson& op = *top;
      double pct = op["percent_of_total"].is_number() ? op["percent_of_total"].get<double>() : 0;
      const ojson& eff = op["efficiency"];
      std::optional<double> e = opt(eff["efficiency_percent"]);
      issue = issue_text(kind, op, e, bound);
      bool batching = issue.find("batching") != std::string::npos;
      out += "- **Time:** " + f2(op["time_ms"].get<double>()) + " ms (" + f2(pct) +
             "% of compute, " + std::to_string(op["count"].get<int64_t>()) + " calls)\n";
      if (e) {
        std::string roof = bound == "memory"
                               ? f2(opt(eff["resolved_peak_hbm_bw"]).value_or(0)) + " TB/s HBM"
                               : f2(opt(eff["resolved_peak_maf"]).value_or(0)) + " TFLOPS MAF";
        out += "- **Efficiency:** " + f2(*e) + "% of " + roof + "\n";
      } else {
        out += "- **Efficiency:** unknown (no perf model)\n";
      }
      out += "- **Issue:** " + issue + "\n";
      out += "- **Path A:** " + path_a + "\n- **Path B:** " + path_b + "\n";
      out += "- **Priority:** " + priority_for(pct, e, batching) + "\n";
      if (what_if.is_object())
        out += impact_line(m, what_if, op) + what_if_marker(what_if, members);
      out += regime_line(regimes, members);
    }
    std::string low = f["impact_score_low"].dump(), mid = f["impact_score"].dump(),
                high = f["impact_score_high"].dump();
    out += "\n**Insight**: " + title + ": " + issue + ".\n";
    out += "**Action**: Path A: " + path_a + " Path B: " + path_b + "\n";
    out += "<!-- impact-begin kind=p_item low=" + low + " mid=" + mid + " high=" + high + " -->\n";
    out += "**Impact**: " + low + "\u2013" + high + " % of end-to-end time (mid " + mid + " %)\n";
    if (f.value("estimate_method", std::string()) == "heuristic")
      out += "Warning \u2014 estimated from time share, no perf model\n";
    out += "<!-- impact-end -->\n\n";

    details += "<!-- reasoning-candidate tier=compute rank=" + std::to_string(number) + " -->\n";
    details += "#### " + title + "\n";
    details += "**Identification:** rank " + std::to_string(number) + " of " + cat +
               "_metrics.json's category_findings (" + bound + "-bound, " +
               f.value("eff_bucket", std::string("?")) + "% efficiency bucket, " +
               std::to_string(f["member_count"].get<int64_t>()) + " op(s), estimate " +
               f.value("estimate_method", std::string("?")) + ").\n";
    details += "**Data:**\n\n" + data_table_header();
    for (const ojson* op : members) details += data_table_row(*op);
    details += "\n**Reasoning for Slowdown:** " + issue + ".\n";
    details += "**Resolution:** Path A: " + path_a + " Path B: " + path_b + "\n";
    details += "**Impact estimate:**\n<!-- impact-begin kind=detail_estimate low=" + low +
               " high=" + high + " -->\n- Low end: " + low +
               " % of end-to-end time\n- High end: " + high +
               " % of end-to-end time\n<!-- impact-end -->\n\n";
  }
  if (number == 0) out += "No P-item: no group of ops reaches 0.5 % of end-to-end time.\n\n";
  out += "## Detailed Analysis\n\n" + details;

  out += "## Additional Notes\n";
  const ojson& spec = m["category_specific"];
  if (spec.contains("missing_perf_model_count"))
    out += "- Missing perf models: " + spec["missing_perf_model_count"].dump() + "\n";
  if (spec.contains("quantized_count"))
    out += "- Quantized GEMMs detected: " + spec["quantized_count"].dump() + "\n";
  for (const auto& op : ops)
    if (op.contains("efficiency_warning"))
      out += "- " + op["name"].get<std::string>() + ": " +
             op["efficiency_warning"].get<std::string>() + "\n";
  size_t groups = m["category_findings"].size();
  out += "- Rule-based P-items (impact >= 0.5 % of E2E): " + std::to_string(groups) + "\n";
  for (const auto& f : m["category_findings"])
    out += "  - " + f["bound_type"].get<std::string>() + " / " + f["library"].get<std::string>() +
           " / " + f["eff_bucket"].get<std::string>() + ": impact " +
           f2(f["impact_score"].get<double>()) + "% (" + f2(f["impact_score_low"].get<double>()) +
           "-" + f2(f["impact_score_high"].get<double>()) + "), " +
           std::to_string(f["member_count"].get<int64_t>()) + " op(s)\n";
  if (what_if.is_object()) {
    if (what_if["method"] == "what_if")
      out +=
          "- Impact estimates of the key bottlenecks: what-if on the critical-path graph of the "
          "trace (" +
          std::to_string(what_if["iterations"].get<int64_t>()) + " iteration(s), " +
          what_if["iterations_source"].get<std::string>() +
          "); the P-item ranges are trace time shares (% of GPU time)\n";
    else
      out += "- Impact estimates: trace time share (% of GPU time): " +
             what_if["reason"].get<std::string>() + "\n";
  }
  out += "\n_Draft generated by jarvis from " + cat +
         "_metrics.json; validate against the tree data before acting._\n";
  return out;
}

}  // namespace

std::string draft_findings(const std::string& cat, const ojson& m, const std::string& display,
                           const ojson& what_if, const ojson& regimes) {
  return draft(cat, m, display, what_if, regimes, ojson(), ojson());
}

std::string draft_findings(const AnalyzeResult& result) {
  return draft(result.category, result.metrics, "", result.impact_what_if, result.regimes,
               result.idle, result.category == "cpu_idle" ? result.insights : ojson()) +
         insights_markdown(result.insights);
}

}  // namespace jarvis::analysis
