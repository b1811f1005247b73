#include "xplane/kernel_summary.h"
#include "base/text_match.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <set>
#include <utility>

namespace jarvis::xplane {

namespace {

struct CategoryKeys {
  std::string_view category;
  std::vector<std::string_view> keys;
};

// TraceLens util.py TraceEventUtils.JaxOpKeys.ClassCategories, in its order.
const std::vector<CategoryKeys>& categories() {
  static const std::vector<CategoryKeys> table = {
      {"GEMM", {"Cijk", "gemm", "nvjet", "cublasLt"}},
      {"FA BWD", {"FmhaBwd", "flash_bprop", "ck_fused_attn::dk_dv_reduce_thd", "fmha_bwd"}},
      {"FA FWD", {"FmhaFwd", "flash_fprop", "fmha_fwd"}},
      {"FA V3", {"kernel_func"}},
      {"Conv", {"conv_", "conv.", "conv-"}},
      {"TE", {"transformer_engine", "te_fused_attn"}},
      {"Communication rccl/nccl", {"rccl", "nccl"}},
  };
  return table;
}

std::string_view match(std::string_view text) {
  if (text.empty()) return {};
  for (const auto& c : categories())
    for (std::string_view k : c.keys)
      if (text.find(k) != std::string_view::npos) return c.category;
  return {};
}

struct Group {
  double sum_us = 0;
  int64_t count = 0;
};

// Groups by key (pandas groupby sorts the keys), then orders by summed time,
// descending (ties keep the key order).
std::vector<std::pair<std::string, Group>> grouped(const std::vector<KernelLaunch>& kernels,
                                                   std::string (*key)(const KernelLaunch&),
                                                   bool xla_only) {
  std::map<std::string, Group> groups;
  for (const KernelLaunch& k : kernels) {
    if (xla_only && k.category != kXlaCategory) continue;
    Group& g = groups[key(k)];
    g.sum_us += k.dur_us;
    ++g.count;
  }
  std::vector<std::pair<std::string, Group>> rows(groups.begin(), groups.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second.sum_us > b.second.sum_us; });
  return rows;
}

size_t gpu_count(const std::vector<KernelLaunch>& kernels, bool xla_only) {
  std::set<int64_t> pids;
  for (const KernelLaunch& k : kernels)
    if (!xla_only || k.category == kXlaCategory) pids.insert(k.gpu_pid);
  return std::max<size_t>(pids.size(), 1);
}

Table summary(const std::string& sheet, const std::vector<KernelLaunch>& kernels,
              std::string (*key)(const KernelLaunch&), bool xla_only) {
  Table t(sheet, {"name", "total_direct_kernel_time_sum", "Count", "total_direct_kernel_time_ms",
                  "Percentage (%)", "Cumulative Percentage (%)", "time ms per gpu"});
  auto rows = grouped(kernels, key, xla_only);
  double total_ms = 0;
  for (const auto& [_, g] : rows) total_ms += g.sum_us / 1000;
  const auto gpus = static_cast<double>(gpu_count(kernels, xla_only));
  double cumulative = 0;
  for (const auto& [name, g] : rows) {
    auto& row = t.add_row();
    double ms = g.sum_us / 1000;
    double pct = ms / total_ms * 100;
    cumulative += pct;
    row[0] = Cell(name);
    row[1] = Cell(g.sum_us);
    row[2] = Cell(g.count);
    row[3] = Cell(ms);
    row[4] = Cell(pct);
    row[5] = Cell(cumulative);
    row[6] = Cell(ms / gpus);
  }
  return t;
}

std::string by_name(const KernelLaunch& k) {
  return std::string(k.name);
}

// TraceLens: "".join(c for c in name if not c.isdigit()).
std::string without_digits(const KernelLaunch& k) {
  std::string out;
  for (char c : k.name)
    if (c < '0' || c > '9') out.push_back(c);
  return out;
}

}  // namespace

std::string_view kernel_op_category(std::string_view name, std::string_view hlo_op) {
  std::string_view by_name_cat = match(name);
  const bool fa = by_name_cat == "FA BWD" || by_name_cat == "FA FWD" || by_name_cat == "FA V3";
  if (!fa)
    if (std::string_view by_hlo = match(hlo_op); !by_hlo.empty()) return by_hlo;
  return by_name_cat.empty() ? kXlaCategory : by_name_cat;
}

std::vector<KernelLaunch> kernel_launches(const Trace& trace) {
  std::vector<KernelLaunch> out;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (!e.is_gpu() || !e.has_dur()) continue;
    const ProcId& pid = trace.pid(e);
    if (pid.is_string || !pid.present()) continue;
    if (trace.process_name(pid).find("/device:GPU") == std::string::npos) continue;
    if (trace.thread_name(pid, trace.tid(e)).rfind("Stream", 0) != 0) continue;
    std::string_view name = trace.name(u);
    if (starts_with_ci(name, "copy") || starts_with_ci(name, "memcpy") ||
        starts_with_ci(name, "memset"))
      continue;
    std::string_view hlo_op;
    if (const PyValue* v = trace.arg(u, "hlo_op"); v && v->is_string()) hlo_op = v->s;
    out.push_back({u, pid.value, name, kernel_op_category(name, hlo_op), e.dur()});
  }
  return out;
}

Table kernel_launchers_summary_table(const std::vector<KernelLaunch>& kernels) {
  return summary("kernel_launchers_summary", kernels, by_name, false);
}

Table xla_summary_table(const std::vector<KernelLaunch>& kernels) {
  return summary("xla_summary", kernels, without_digits, true);
}

Table kernel_launchers_summary_by_category_table(const std::vector<KernelLaunch>& kernels) {
  Table t("kernel_launchers_summary_by_category",
          {"op category", "Count", "total_direct_kernel_time_ms", "Percentage (%)",
           "Cumulative Percentage (%)", "time ms per gpu"});
  auto rows = grouped(
      kernels, [](const KernelLaunch& k) { return std::string(k.category); }, false);
  double total_ms = 0;
  for (const auto& [_, g] : rows) total_ms += g.sum_us / 1000;
  const auto gpus = static_cast<double>(gpu_count(kernels, false));
  double cumulative = 0;
  for (const auto& [category, g] : rows) {
    auto& row = t.add_row();
    double ms = g.sum_us / 1000;
    double pct = ms / total_ms * 100;
    cumulative += pct;
    row[0] = Cell(category);
    row[1] = Cell(g.count);
    row[2] = Cell(ms);
    row[3] = Cell(pct);
    row[4] = Cell(cumulative);
    row[5] = Cell(ms / gpus);
  }
  return t;
}

}  // namespace jarvis::xplane
