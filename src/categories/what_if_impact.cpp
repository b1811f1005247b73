#include "categories/what_if_impact.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "categories/category_analysis_internal.h"
#include "critical_path/critical_path.h"

namespace jarvis::analysis {

namespace fs = std::filesystem;
namespace cp = critical_path;

namespace {

// The last graph built, reused while its file is unchanged (`analyze all`
// asks once per category).
struct CachedGraph {
  std::string path;
  uintmax_t size = 0;
  fs::file_time_type mtime;
  std::shared_ptr<const cp::Loaded> loaded;
};

std::shared_ptr<const cp::Loaded> graph_of(const std::string& path) {
  static std::mutex mu;
  static CachedGraph cache;
  const uintmax_t size = fs::file_size(path);
  const auto mtime = fs::last_write_time(path);
  {
    std::lock_guard lock(mu);
    if (cache.loaded && cache.path == path && cache.size == size && cache.mtime == mtime)
      return cache.loaded;
  }
  auto loaded = std::make_shared<const cp::Loaded>(cp::load_graph({path}));
  std::lock_guard lock(mu);
  cache = {path, size, mtime, loaded};
  return loaded;
}

ojson no_graph(const std::string& reason) {
  return {{"method", "trace_time_share"}, {"reason", reason}, {"estimates", ojson::array()}};
}

// The operation row an estimate came from: same name and time (the estimate
// copies both), first one not used yet.
const ojson* operation_of(const ojson& operations, const ojson& estimate, std::vector<char>& used) {
  for (size_t k = 0; k < operations.size(); ++k) {
    const ojson& op = operations[k];
    if (used[k] || op["name"] != estimate["operation"]) continue;
    if (std::abs(op["time_ms"].get<double>() - estimate["time_ms"].get<double>()) > 5e-4) continue;
    used[k] = 1;
    return &op;
  }
  return nullptr;
}

// Does the trace's cpu op carry the row's shape args (as TraceLens prints them)?
bool same_args(const Trace& t, Uid uid, const ojson& op) {
  for (const char* key : {"Input Dims", "Input type"}) {
    if (!op.contains(key) || !op[key].is_string()) continue;
    const PyValue* v = t.arg(uid, key);
    if (!v || v->repr_tuple() != op[key].get<std::string>()) return false;
  }
  return true;
}

// The GPU events of the trace's cpu ops that match the metrics row (name,
// and Input Dims / Input type when given), wherever the call tree puts them:
// an op's kernels are often launched by its child ops (aten::linear ->
// aten::addmm, the SDPA ops -> their flash / cuDNN ops, convolution ->
// cudnn_convolution), so the op's whole subtree counts, once per outermost
// matching op.
std::vector<Uid> kernels_of(const Trace& trace, const CallTree& tree, const ojson& op) {
  const std::string name = op["name"].get<std::string>();
  std::vector<char> matched(trace.events.size(), 0);
  for (Uid u = 0; u < trace.events.size(); ++u)
    if (trace.events[u].cat == Cat::CpuOp && trace.name(u) == name && same_args(trace, u, op))
      matched[u] = 1;
  std::vector<Uid> out;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    if (!matched[u]) continue;
    const auto chain = tree.parent_chain(u);
    if (std::any_of(chain.begin(), chain.end(), [&](Uid p) { return matched[p] != 0; })) continue;
    for (Uid g : tree.gpu_events(u)) out.push_back(g);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Below this share of the ideal saving (all the kernels' time cut comes off
// the step), the estimate says why the step does not gain.
constexpr double kNoSavingShare = 0.05;

// Why faster kernels would not shorten the step: the GPU waits for the host
// (host-bound iterations), or something else runs on the path while they do.
std::string why_no_saving(const cp::Analysis& a, const cp::Graph& graph,
                          const std::vector<Uid>& uids) {
  size_t host_bound = 0;
  double idle = 0, length = 0;
  for (const auto& it : a.iterations) {
    host_bound += it.bound_by == cp::kBoundByHost;
    for (const auto& [rank, t] : it.gpu_idle_us) idle += t;
    length += it.length_us;
  }
  if (host_bound * 2 > a.iterations.size())
    return fmt::format("host-bound: GPU idle {:.0f}% of the step",
                       length > 0 ? 100 * idle / length : 0.0);
  // The kernels' spans, and the path's time inside them by what it is.
  std::vector<std::pair<double, double>> spans;
  for (const cp::Node& n : graph.nodes)
    if (n.kind == cp::NodeKind::Gpu && std::binary_search(uids.begin(), uids.end(), n.uid))
      spans.emplace_back(n.start, n.end());
  std::map<std::string, double> over;
  for (const auto& it : a.iterations)
    for (const auto& seg : it.path)
      for (const auto& [lo, hi] : spans) {
        const double t = std::min(hi, seg.start_us + seg.dur_us) - std::max(lo, seg.start_us);
        if (t > 0) {
          // Appended, not `" " + std::string(op)`: GCC 12's -Wrestrict false
          // positive on that operator+ once inlined (GCC bug 105651).
          std::string key(seg.category());
          if (!seg.op().empty()) key.append(" ").append(seg.op());
          over[key] += t;
        }
      }
  auto top = std::max_element(over.begin(), over.end(),
                              [](const auto& x, const auto& y) { return x.second < y.second; });
  return top == over.end() ? "off the critical path: these kernels run outside the iterations"
                           : "off the critical path: overlapped by " + top->first;
}

}  // namespace

std::string prepared_trace_path(const std::string& output_dir) {
  ojson manifest;
  try {
    manifest = read_json_file(output_dir + "/category_data/category_manifest.json");
  } catch (const std::exception&) {
    return "";
  }
  if (!manifest.contains("trace_path") || !manifest["trace_path"].is_string()) return "";
  const fs::path recorded = manifest["trace_path"].get<std::string>();
  if (recorded.empty()) return "";
  std::error_code ec;
  for (const fs::path& p :
       {recorded.is_absolute() ? recorded : fs::path(output_dir) / recorded, recorded})
    if (fs::is_regular_file(p, ec)) return p.string();
  return "";
}

ojson what_if_impacts(const ojson& metrics, const std::string& trace_path) {
  if (trace_path.empty())
    return no_graph("the trace the directory was prepared from is not available");
  if (!metrics.contains("impact_estimates") || !metrics["impact_estimates"].is_array())
    return no_graph("the metrics have no impact estimates");
  std::shared_ptr<const cp::Loaded> loaded;
  try {
    loaded = graph_of(trace_path);
  } catch (const std::exception& e) {
    return no_graph(std::string("no dependency graph: ") + e.what());
  }
  const Trace& trace = *loaded->traces.front();
  const CallTree& tree = *loaded->trees.front();
  const cp::Graph& graph = loaded->graph;
  // The un-profiled step (the what-if's base, computed once for every
  // estimate's two replays): savings are shares of it.
  cp::WhatIfBase base;
  const cp::Analysis measured = cp::analyse_unprofiled(graph, base);
  ojson out = {{"method", "what_if"},
               {"trace", trace_path},
               {"step_time_us", measured.step_time_us},
               {"recorded_step_time_us", measured.recorded_step_time_us},
               {"iterations", measured.iterations.size()},
               {"iterations_source", measured.iterations_source},
               {"estimates", ojson::array()}};
  const ojson& operations = metrics.contains("operations") ? metrics["operations"] : ojson::array();
  std::vector<char> used(operations.size(), 0);
  for (const ojson& est : metrics["impact_estimates"]) {
    ojson e = {{"operation", est["operation"]},
               {"time_ms", est["time_ms"]},
               {"estimate_method", est["estimate_method"]},
               {"trace_time_impact_low", est["impact_score_low"]},
               {"trace_time_impact_high", est["impact_score_high"]}};
    const ojson* op = operation_of(operations, est, used);
    if (op && op->contains("args")) e["args"] = (*op)["args"];
    // The duration factors of the estimate's two targets.
    double low = 1 - detail::kHeuristicSavingLow, high = 1 - detail::kHeuristicSavingHigh;
    if (est["estimate_method"] == "quantified" && est["efficiency_pct"].is_number()) {
      const double gap =
          std::max(0.0, 1 - est["efficiency_pct"].get<double>() / detail::kImpactTargetHigh);
      low = 1 - detail::kImpactTargetLow / detail::kImpactTargetHigh * gap;
      high = 1 - gap;
    }
    low = std::max(low, 1e-6);
    high = std::max(high, 1e-6);
    cp::Selector sel;
    double kernel_us = 0;
    if (op)
      for (Uid g : kernels_of(trace, tree, *op)) {
        sel.gpu_uids.push_back(g);
        kernel_us += trace.events[g].dur();
      }
    e["factor_low"] = low;
    e["factor_high"] = high;
    e["kernels"] = sel.gpu_uids.size();
    e["kernel_time_ms"] = kernel_us / 1000.0;
    if (sel.gpu_uids.empty()) {
      e["method"] = "trace_time_share";
      e["reason"] = "no kernel of this operation found in the trace";
      out["estimates"].push_back(std::move(e));
      continue;
    }
    try {
      cp::Scenario sc;
      sc.select = sel;
      sc.factor = low;
      const double saved_low =
          measured.step_time_us - cp::what_if_step(graph, sc, base).predicted_step_time_us;
      sc.factor = high;
      const double saved_high =
          measured.step_time_us - cp::what_if_step(graph, sc, base).predicted_step_time_us;
      const double step = measured.step_time_us;
      e["method"] = "what_if";
      const double ideal_high =
          kernel_us * (1 - high) / std::max<size_t>(1, measured.iterations.size());
      if (saved_high < kNoSavingShare * ideal_high)
        e["saving_reason"] = why_no_saving(measured, graph, sel.gpu_uids);
      e["saving_low_us"] = saved_low;
      e["saving_high_us"] = saved_high;
      e["impact_low_pct"] = step > 0 ? saved_low / step * 100 : 0.0;
      e["impact_high_pct"] = step > 0 ? saved_high / step * 100 : 0.0;
    } catch (const cp::CriticalPathError& err) {
      // The kernels are outside the graph (no timestamps): no prediction.
      e["method"] = "trace_time_share";
      e["reason"] = err.what();
    }
    out["estimates"].push_back(std::move(e));
  }
  return out;
}

}  // namespace jarvis::analysis
