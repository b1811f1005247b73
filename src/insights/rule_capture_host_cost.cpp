// Where the host time of a CUDA/HIP graph capture goes. A trace of the
// capture (vLLM / SGLang warm-up: every layer's ops run once per captured
// batch size while the graph records) says nothing about the decode step's
// speed, but it does say what the server's startup pays for: the top-level
// ops' host time, and ops whose host time per call stands out against the
// other wrappers'. A one-time cost, so no step time is claimed.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "insights/rules_internal.h"
#include "insights/trace_facts.h"

namespace jarvis::insights {
namespace {

constexpr size_t kTopOps = 4;
constexpr size_t kMinCallsForOutlier = 8;
constexpr double kOutlierPerCallRatio = 5.0;

struct HostOp {
  std::string name;
  Uid first = kNoUid;
  size_t calls = 0;
  double host_us = 0;
  double per_call_us() const { return calls ? host_us / static_cast<double>(calls) : 0; }
};

bool has_cpu_op_ancestor(const InsightContext& c, Uid u) {
  for (Uid p = c.tree.parent(u); p != kNoUid; p = c.tree.parent(p))
    if (c.trace.events[p].cat == Cat::CpuOp) return true;
  return false;
}

// Top-level cpu_ops (no cpu_op above them) by name, largest host time first.
std::vector<HostOp> top_level_ops(const InsightContext& c) {
  std::map<std::string, HostOp> by_name;
  for (Uid u = 0; u < c.trace.events.size(); ++u) {
    const Event& e = c.trace.events[u];
    if (e.cat != Cat::CpuOp || !e.has_dur() || has_cpu_op_ancestor(c, u)) continue;
    HostOp& op = by_name[std::string(c.trace.name(u))];
    if (op.first == kNoUid) op.first = u, op.name = std::string(c.trace.name(u));
    ++op.calls;
    op.host_us += e.dur();
  }
  std::vector<HostOp> out;
  for (auto& entry : by_name) out.push_back(std::move(entry.second));
  std::stable_sort(out.begin(), out.end(),
                   [](const HostOp& a, const HostOp& b) { return a.host_us > b.host_us; });
  return out;
}

double median_per_call_us(const std::vector<HostOp>& ops) {
  std::vector<double> v;
  for (const auto& op : ops)
    if (op.calls >= kMinCallsForOutlier) v.push_back(op.per_call_us());
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

void rule_capture_host_cost(const InsightContext& c, std::vector<Insight>& out) {
  const size_t capture_calls = detail::graph_capture_calls(c);
  if (capture_calls == 0) return;
  const std::vector<HostOp> ops = top_level_ops(c);
  if (ops.empty()) return;
  double total_us = 0;
  for (const auto& op : ops) total_us += op.host_us;
  const double median_us = median_per_call_us(ops);
  // The op whose host time per call stands out most against the median
  // wrapper's (among ops called often enough to be per-layer wrappers).
  const HostOp* outlier = nullptr;
  for (const auto& op : ops)
    if (op.calls >= kMinCallsForOutlier && median_us > 0 &&
        op.per_call_us() >= kOutlierPerCallRatio * median_us &&
        (!outlier || op.host_us > outlier->host_us))
      outlier = &op;
  Insight i;
  i.rule = "capture_host_cost";
  i.scope = "trace";
  i.category = "cpu";
  i.severity = "low";
  i.time_us = total_us;
  i.gain_upper_bound_us = 0.0;  // one-time: nothing per step
  std::vector<std::string> parts;
  nlohmann::json listed = nlohmann::json::array();
  for (size_t k = 0; k < ops.size() && k < kTopOps; ++k) {
    const HostOp& op = ops[k];
    parts.push_back(fmt::format("{} {:.2f} ms ({} calls)", op.name, op.host_us / 1e3, op.calls));
    i.uids.push_back(op.first);
    listed.push_back({{"op", op.name},
                      {"calls", op.calls},
                      {"host_us", op.host_us},
                      {"host_us_per_call", op.per_call_us()},
                      {"share_of_top_level_host_time", total_us > 0 ? op.host_us / total_us : 0}});
  }
  i.title = fmt::format(
      "Graph capture host time: {:.2f} ms in top-level ops, most in {}; a one-time startup "
      "cost per captured batch size, not a per-step cost",
      total_us / 1e3, fmt::join(parts, ", "));
  if (outlier)
    i.title +=
        fmt::format(". {} takes {:.0f} us of host time per call, {:.1f}x the median op's",
                    outlier->name, outlier->per_call_us(), outlier->per_call_us() / median_us);
  i.detail =
      "The trace recorded a CUDA/HIP graph capture: each layer's ops run once on the host while "
      "the graph records. Their host time is what startup (and each new captured batch size) "
      "pays, not what a replayed decode step costs; an op far above the others per call is "
      "Python or dispatch work worth trimming when startup time matters.";
  i.evidence = {{"graph_capture_calls", capture_calls},
                {"top_level_host_us", total_us},
                {"top_level_ops", ops.size()},
                {"median_host_us_per_call", median_us},
                {"largest", listed}};
  if (outlier)
    i.evidence["per_call_outlier"] = {{"op", outlier->name},
                                      {"host_us_per_call", outlier->per_call_us()},
                                      {"calls", outlier->calls}};
  i.action_model =
      "For startup time: capture fewer batch sizes, or trim the Python work of the op that "
      "stands out per call (cache what it recomputes, move checks out of the forward).";
  i.action_kernel = "None: host time during a capture is not device time.";
  i.verify =
      "parent_chain on the op lists what runs under it; a trace of the replayed steps (profile "
      "after warm-up) shows the per-step cost.";
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
