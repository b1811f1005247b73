// Memory-bound ops far below the bandwidth that this very trace shows is
// achievable: the fastest large elementwise op sets the baseline (what the
// GPU, its clocks and this software stack really deliver), and norm, reduce
// and elementwise ops at less than half of it are poorly implemented or
// poorly shaped, whatever the datasheet peak says.
#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include <fmt/format.h>

#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

constexpr double kMinBaselineOpUs = 10.0;  // ops shorter than this never reach full bandwidth
constexpr double kSlowFraction = 0.5;
constexpr double kMinGroupShare = 0.005;

struct BandwidthGroup {
  std::string category, label;
  std::vector<Uid> uids;
  double time_us = 0, bytes = 0;
  size_t calls = 0;
  double tbs() const { return time_us > 0 ? bytes / time_us / 1e6 : 0; }  // TB/s
};

bool memory_bound_category(std::string_view cat) {
  return cat == "elementwise" || cat == "reduce" || cat.starts_with("NORM") ||
         cat.starts_with("Normalization");
}

// Rows by op shape (name, spec, bytes), memory-bound categories only.
std::map<std::string, BandwidthGroup> memory_bound_groups(const InsightContext& c) {
  std::map<std::string, BandwidthGroup> groups;
  std::string label;  // one buffer for every row's label, not three strings a row
  for (const auto& row : c.rows) {
    if (!row.metrics || !row.metrics->bytes || !(row.kernel_time_us > 0)) continue;
    if (!memory_bound_category(row.category)) continue;
    label.clear();
    label.append(row.name).append(" ").append(row.metrics->compute_spec).append(" ");
    fmt::format_to(std::back_inserter(label), "{:.6g}", *row.metrics->bytes);
    auto it = groups.find(label);
    if (it == groups.end()) it = groups.emplace(label, BandwidthGroup{}).first;
    BandwidthGroup& g = it->second;
    // The last row's category (a sole-backward row has its own) and name,
    // copied only when they differ.
    if (g.category != row.category) g.category = std::string(row.category);
    if (g.label != row.name) g.label = row.name;
    g.uids.push_back(row.uid);
    g.time_us += row.kernel_time_us;
    g.bytes += *row.metrics->bytes;
    ++g.calls;
  }
  return groups;
}

std::optional<detail::BandwidthBaseline> baseline_of(
    const std::map<std::string, BandwidthGroup>& groups) {
  detail::BandwidthBaseline best;
  for (const auto& [label, g] : groups)
    if (g.category == "elementwise" &&
        g.time_us / static_cast<double>(g.calls) >= kMinBaselineOpUs && g.tbs() > best.tbs)
      best = {g.tbs(), label};
  if (!(best.tbs > 0)) return std::nullopt;
  return best;
}

}  // namespace

namespace detail {
std::optional<BandwidthBaseline> elementwise_bandwidth_baseline(const InsightContext& c) {
  return baseline_of(memory_bound_groups(c));
}
}  // namespace detail

void rule_bandwidth_baseline(const InsightContext& c, std::vector<Insight>& out) {
  // NCHW batch norms beside layout conversions: their cause is the model's
  // memory format, and their fix channels_last (conv_layout_transposes).
  const auto layout_rows = detail::nchw_batch_norm_rows(c);
  std::set<Uid> layout_uids;
  for (size_t r : layout_rows) layout_uids.insert(c.rows[r].uid);
  const auto groups = memory_bound_groups(c);
  const auto found = baseline_of(groups);
  if (!found) return;
  const double baseline = found->tbs;
  const std::string& baseline_op = found->op;
  std::map<std::string, std::vector<const BandwidthGroup*>> slow_by_category;
  for (const auto& [label, g] : groups)
    if (g.tbs() < kSlowFraction * baseline && detail::share_of(c, g.time_us) >= kMinGroupShare)
      slow_by_category[g.category].push_back(&g);
  for (auto& [category, slow] : slow_by_category) {
    std::sort(slow.begin(), slow.end(), [](const BandwidthGroup* a, const BandwidthGroup* b) {
      return a->time_us > b->time_us;
    });
    Insight i;
    i.rule = "bandwidth_baseline";
    i.scope = "op";
    i.category = category;
    double gain = 0;
    nlohmann::json ops = nlohmann::json::array();
    for (const BandwidthGroup* g : slow) {
      i.time_us += g->time_us;
      gain += g->time_us - g->bytes / (baseline * 1e6);
      i.uids.insert(i.uids.end(), g->uids.begin(), g->uids.end());
      ops.push_back({{"op", g->label},
                     {"calls", g->calls},
                     {"time_us", g->time_us},
                     {"achieved_tbs", g->tbs()},
                     {"fraction_of_baseline", g->tbs() / baseline}});
    }
    i.share = detail::share_of(c, i.time_us);
    i.severity = detail::severity_by_share(i.share);
    i.gain_upper_bound_us = gain;
    i.title = fmt::format(
        "{}: {} op shapes at < {:.0f}% of this trace's own elementwise "
        "bandwidth ({:.2f} TB/s): {:.1f} us, {:.1f}% of kernel time",
        category, slow.size(), 100 * kSlowFraction, baseline, i.time_us, 100 * i.share);
    i.detail =
        "The trace shows the GPU can stream memory at the baseline rate; these "
        "memory-bound ops move their bytes at less than half of it.";
    i.evidence = {{"baseline_tbs", baseline}, {"baseline_op", baseline_op}, {"ops", ops}};
    i.action_model =
        "Check shapes and layouts of these ops (non-contiguous inputs, tiny inner "
        "dimensions, broadcasting) and fuse them with neighbours.";
    const auto nchw = std::count_if(i.uids.begin(), i.uids.end(),
                                    [&](Uid u) { return layout_uids.count(u) > 0; });
    if (nchw > 0)
      i.action_model = fmt::format(
          "{} of these are batch norms on NCHW tensors beside NCHW<->NHWC conversions: "
          "channels_last (model and inputs) gives them their NHWC kernels "
          "(conv_layout_transposes sizes the whole change). Else: {}",
          nchw, i.action_model);
    i.action_kernel =
        "A vectorised, coalesced kernel for these shapes (norm/reduce kernels with "
        "the right block size for the reduced dimension).";
    i.verify =
        "Compare achieved_tbs with the baseline op's; an op shorter than ~10 us cannot "
        "reach full bandwidth (latency-bound): judge it by count instead.";
    out.push_back(std::move(i));
  }
}

}  // namespace jarvis::insights
