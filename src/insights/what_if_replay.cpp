// One figure per change (issue 73 point 4): a finding's step saving is what
// the what-if its arguments name replays (Insight::what_if, the what_if
// tool's arguments beside `traces`), on the un-profiled step. The rules size
// host fixes by their own scenario (the syncs or loader calls inside the
// steps); replaying the arguments an agent is given makes the two one number.
#include <algorithm>
#include <string>
#include <vector>

#include "critical_path/host_gaps.h"
#include "insights/rules_internal.h"

namespace jarvis::insights::detail {

std::optional<double> what_if_replay_total_us(const InsightContext& c, const nlohmann::json& args) {
  if (!c.step || !args.is_object()) return std::nullopt;
  const auto& graph = c.step->graph;
  const std::vector<critical_path::RankInput> inputs{{&c.trace, &c.tree, -1}};
  try {
    critical_path::Scenario sc;
    if (args.contains("kernel_uids")) {
      sc.select.gpu_uids = args["kernel_uids"].get<std::vector<Uid>>();
      sc.factor = args.value("factor", 1.0);
    }
    sc.remove_launch_gaps = args.value("remove_launch_gaps", false);
    critical_path::HostRemoval rm;
    if (args.contains("remove_ops")) rm.ops = args["remove_ops"].get<std::vector<std::string>>();
    if (args.contains("remove_uids")) rm.uids = args["remove_uids"].get<std::vector<Uid>>();
    rm.python_frame = args.value("remove_python_frame", "");
    rm.waits_only = args.value("remove_waits_only", false);
    if (!rm.empty()) critical_path::add_host_removal(inputs, graph, rm, sc);
    if (args.contains("remove_host_gaps")) {
      const nlohmann::json& g = args["remove_host_gaps"];
      critical_path::HostGapSelector sel;
      sel.after = g.value("after", "");
      sel.before = g.value("before", "");
      sel.min_us = g.value("min_us", sel.min_us);
      critical_path::add_host_gap_removal(inputs, graph, sel, sc);
    }
    const auto r = step_time_what_if(c, sc);
    return std::max(0.0, r.measured_step_time_us - r.predicted_step_time_us) *
           static_cast<double>(c.step->measured.iterations.size());
  } catch (const std::runtime_error&) {  // nothing matched: the rule's own figure stands
    return std::nullopt;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

void replay_what_ifs(const InsightContext& c, std::vector<Insight>& insights) {
  for (Insight& i : insights) {
    // A GPU finding's arguments are the scenario it was sized by already.
    if (!i.step_saving_us || !i.what_if.is_object() || i.what_if.contains("kernel_uids")) continue;
    if (const auto replayed = what_if_replay_total_us(c, i.what_if)) i.step_saving_us = *replayed;
  }
}

}  // namespace jarvis::insights::detail
