// One figure per change (issue 73 point 4): a finding's step saving is what
// the what-if its arguments name replays (Insight::what_if, the what_if
// tool's arguments beside `traces`), on the un-profiled step. The rules size
// host fixes by their own scenario (the syncs or loader calls inside the
// steps); replaying the arguments an agent is given makes the two one number.
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/phase_timer.h"
#include "base/two_threads.h"
#include "critical_path/host_gaps.h"
#include "critical_path/what_if_request.h"
#include "insights/rules_internal.h"
#include "insights/trace_facts.h"

namespace jarvis::insights::detail {

void add_what_if_args(const InsightContext& c, const nlohmann::json& args,
                      critical_path::Scenario& sc) {
  const critical_path::WhatIfRequest request = critical_path::parse_what_if_request(args);
  critical_path::join_gpu_change(request, sc);
  if (!request.removal.empty()) {
    std::string before = sc.host_removal;
    detail::add_host_removal(c, request.removal, sc);  // made once per removal (trace_facts.h)
    if (!before.empty()) sc.host_removal = before + "; " + sc.host_removal;
  }
  // picked from the trace's one scan of its stretches (trace_facts.h)
  if (request.host_gaps) detail::add_host_gap_removal(c, *request.host_gaps, sc);
}

std::optional<double> what_if_replay_total_us(const InsightContext& c, const nlohmann::json& args) {
  if (!c.step || !args.is_object()) return std::nullopt;
  try {
    critical_path::Scenario sc;
    add_what_if_args(c, args, sc);
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
  if (!c.step) return;
  // What what_if_replay_total_us gives each finding, in two passes: the
  // scenarios in turn (their arguments read the trace's memoised facts),
  // then their replays two at a time (each a what-if on the step model's
  // one graph and base, which they only read).
  std::vector<size_t> replayed;
  std::vector<critical_path::Scenario> scenarios;
  for (size_t k = 0; k < insights.size(); ++k) {
    const Insight& i = insights[k];
    // A GPU finding's arguments are the scenario it was sized by already.
    if (!i.step_saving_us || !i.what_if.is_object() || i.what_if.contains("kernel_uids")) continue;
    try {
      critical_path::Scenario sc;
      add_what_if_args(c, i.what_if, sc);
      replayed.push_back(k);
      scenarios.push_back(std::move(sc));
    } catch (const std::runtime_error&) {  // nothing matched: the rule's own figure stands
    } catch (const nlohmann::json::exception&) {
    }
  }
  std::vector<std::optional<double>> saving(scenarios.size());
  std::vector<std::function<void()>> replays;
  for (size_t n = 0; n < scenarios.size(); ++n)
    replays.emplace_back([&c, &scenarios, &saving, n] {
      try {
        const auto r = step_time_what_if(c, scenarios[n]);
        saving[n] = std::max(0.0, r.measured_step_time_us - r.predicted_step_time_us) *
                    static_cast<double>(c.step->measured.iterations.size());
      } catch (const std::runtime_error&) {  // the rule's own figure stands
      }
    });
  run_on_two_threads(replays);
  for (size_t n = 0; n < replayed.size(); ++n)
    if (saving[n]) insights[replayed[n]].step_saving_us = *saving[n];
}

}  // namespace jarvis::insights::detail

namespace jarvis::insights {

namespace {

// A change that takes less than this off a step adds nothing (us).
constexpr double kAddsNothingUs = 10;

bool is_graph_capture(const Insight& i) {
  return i.what_if.value("remove_launch_gaps", false);
}
bool removes_syncs(const Insight& i) {
  return i.rule == "host_sync" || i.what_if.value("remove_waits_only", false);
}

}  // namespace

ChangePlan plan_changes(const InsightContext& c, const std::vector<Insight>& insights,
                        size_t max_changes) {
  ChangePlan plan;
  if (!c.step) return plan;
  PhaseTimer timer("insights/plan");
  plan.step_before_us = c.step->measured.step_time_us;
  const critical_path::Analysis& measured = c.step->measured;
  if (measured.iterations_source == critical_path::kFromDecodeStepsInProfilerStep &&
      !measured.profiler_steps.empty()) {
    plan.step_unit = "decode step";
    plan.step_context = fmt::format(
        "each ProfilerStep (one generate() call) holds {} of them; the call's {:.2f} ms "
        "un-profiled include {:.2f} ms of set-up and prefill before them",
        measured.iterations.size() / measured.profiler_steps.size(),
        measured.profiler_step_us / 1e3, measured.profiler_step_before_us / 1e3);
  }
  const double steps = static_cast<double>(std::max<size_t>(1, c.step->measured.iterations.size()));
  // The candidates, in the ranking's order: findings whose change saves
  // something alone, then (a kernel fix on a host-bound step saves nothing
  // alone, and may once a change above removes the host's bound) those with
  // recoverable time; a few more than max_changes, as some add nothing.
  std::vector<size_t> order;
  const size_t candidates = max_changes + 3;
  for (size_t k = 0; k < insights.size() && k < max_changes; ++k) {
    const Insight& i = insights[k];
    if (!i.what_if.is_object() && i.step_saving_us && *i.step_saving_us / steps >= kAddsNothingUs) {
      PlanStep alone;
      alone.finding = k;
      alone.alone_saving_us = *i.step_saving_us / steps;
      plan.not_replayed.push_back(alone);
    }
  }
  for (bool alone : {true, false})
    for (size_t k = 0; k < insights.size() && order.size() < candidates; ++k) {
      const Insight& i = insights[k];
      if (!i.what_if.is_object() || !i.step_saving_us) continue;
      const bool saves_alone = *i.step_saving_us > 0;
      if (alone ? saves_alone : !saves_alone && i.recoverable_us.value_or(0) > 0)
        order.push_back(k);
    }
  // A CUDA graph captures a step only once nothing in it waits for the GPU:
  // the syncs' removal goes before the graph that needs it, whatever their
  // ranking (s_mask_sync A: the mask's nonzero, then the graph).
  std::vector<std::string> notes(insights.size());
  for (size_t g = 0; g < order.size(); ++g) {
    if (!is_graph_capture(insights[order[g]])) continue;
    for (size_t s = g + 1; s < order.size(); ++s)
      if (removes_syncs(insights[order[s]])) {
        notes[order[s]] = fmt::format("before {}: a CUDA graph cannot capture a step that syncs",
                                      insights[order[g]].rule);
        std::rotate(order.begin() + static_cast<std::ptrdiff_t>(g),
                    order.begin() + static_cast<std::ptrdiff_t>(s),
                    order.begin() + static_cast<std::ptrdiff_t>(s) + 1);
        ++g;
      }
  }
  // Each change is replayed on top of the ones listed above it (joint).
  // Whether a change is listed is known only after its replay, so the
  // replays go two at a time: the next change alone on the joint, and the
  // one after it on the joint with the next (what it replays when the next
  // is listed, the usual case; else it is replayed again, alone, in the
  // next round). The same scenarios in the same order as one at a time.
  critical_path::Scenario joint;
  double before = -1;
  size_t adding = 0;  // changes that add something once those above are made
  struct Replay {
    std::optional<critical_path::Scenario> with;  // unset: its arguments match nothing
    critical_path::WhatIfResult result;
  };
  auto replay = [&c, &insights](const critical_path::Scenario& base,
                                std::initializer_list<size_t> changes, Replay& out) {
    try {
      critical_path::Scenario with = base;
      for (size_t k : changes) detail::add_what_if_args(c, insights[k].what_if, with);
      out.result = detail::step_time_what_if(c, with);
      out.with = std::move(with);
    } catch (const std::runtime_error&) {  // its arguments match nothing: left out
    } catch (const nlohmann::json::exception&) {
    }
  };
  // Lists change k after its replay (true), or leaves it out.
  auto list = [&](size_t k, Replay& rep) {
    if (!rep.with) return false;
    const auto& r = rep.result;
    if (before < 0) before = plan.step_before_us = r.measured_step_time_us;
    PlanStep step;
    step.finding = k;
    step.step_after_us = std::min(before, r.predicted_step_time_us);
    step.saving_us = before - step.step_after_us;
    step.alone_saving_us = *insights[k].step_saving_us / steps;
    step.note = notes[k];
    // Less than 10 us a step adds nothing: listed for a change that saves
    // something alone (10 us or more: it does not pay after those above),
    // else left out.
    const bool adds = step.saving_us >= kAddsNothingUs;
    if (!adds && step.alone_saving_us < kAddsNothingUs) return false;
    adding += adds;
    plan.steps.push_back(step);
    before = step.step_after_us;
    joint = std::move(*rep.with);
    return true;
  };
  for (size_t n = 0; n < order.size() && adding < max_changes;) {
    const size_t next = order[n];
    const bool pair = n + 1 < order.size();
    Replay alone, after;
    run_on_two_threads({[&] { replay(joint, {next}, alone); },
                        [&] {
                          if (pair) replay(joint, {next, order[n + 1]}, after);
                        }});
    ++n;
    if (list(next, alone) && pair && adding < max_changes) {
      list(order[n], after);
      ++n;
    }
  }
  return plan;
}

nlohmann::json to_json(const ChangePlan& plan, const std::vector<Insight>& insights) {
  nlohmann::json steps = nlohmann::json::array();
  for (const PlanStep& s : plan.steps) {
    steps.push_back({{"rule", insights[s.finding].rule},
                     {"change", insights[s.finding].change},
                     {"rank", s.finding + 1},
                     {"step_after_us", s.step_after_us},
                     {"saving_us_per_step", s.saving_us},
                     {"alone_saving_us_per_step", s.alone_saving_us}});
    if (!s.note.empty()) steps.back()["note"] = s.note;
  }
  nlohmann::json out = {
      {"step_before_us", plan.step_before_us},
      {"step_after_us", plan.steps.empty() ? plan.step_before_us : plan.steps.back().step_after_us},
      {"changes", steps}};
  for (const PlanStep& s : plan.not_replayed)
    out["not_replayed"].push_back({{"rule", insights[s.finding].rule},
                                   {"rank", s.finding + 1},
                                   {"alone_saving_us_per_step", s.alone_saving_us}});
  return out;
}

std::string plan_text(const ChangePlan& plan, const std::vector<Insight>& insights) {
  if (plan.steps.empty() && plan.not_replayed.empty()) return {};
  std::string out =
      fmt::format("The changes in order, each after those above (un-profiled {} {:.2f} ms{}):\n",
                  plan.step_unit.empty() ? "step" : plan.step_unit, plan.step_before_us / 1e3,
                  plan.step_context.empty() ? "" : "; " + plan.step_context);
  // Changes that add nothing once those above are made (under 10 us a step:
  // the step is bound elsewhere then) share one line, by rule, after the
  // numbered ones: the plan reads as the changes that pay.
  std::vector<std::pair<std::string, std::vector<double>>> add_nothing;
  size_t number = 0;
  for (const PlanStep& s : plan.steps) {
    const Insight& i = insights[s.finding];
    const std::string name =
        fmt::format("{}{}{}", i.rule, i.change.empty() ? "" : fmt::format(" ({})", i.change),
                    s.note.empty() ? "" : fmt::format(" [{}]", s.note));
    if (s.saving_us < kAddsNothingUs) {
      auto same = std::find_if(add_nothing.begin(), add_nothing.end(),
                               [&](const auto& entry) { return entry.first == name; });
      if (same == add_nothing.end()) same = add_nothing.insert(add_nothing.end(), {name, {}});
      same->second.push_back(s.alone_saving_us);
      continue;
    }
    const bool differs = std::abs(s.saving_us - s.alone_saving_us) > 0.05 * s.alone_saving_us &&
                         std::abs(s.saving_us - s.alone_saving_us) >= 10;
    // "finding N": its rank in the list below (the structured plan's rank).
    out += fmt::format("  {}. {} (finding {}): -{:.2f} ms -> {:.2f} ms/step{}\n", ++number, name,
                       s.finding + 1, s.saving_us / 1e3, s.step_after_us / 1e3,
                       !differs ? std::string()
                       : s.alone_saving_us < kAddsNothingUs
                           ? std::string(" (nothing alone: the step was bound elsewhere)")
                           : fmt::format(" (alone: -{:.2f} ms)", s.alone_saving_us / 1e3));
  }
  if (!plan.steps.empty())
    out += fmt::format(
        "  together: {:.2f} -> {:.2f} ms/step (-{:.1f}%)\n", plan.step_before_us / 1e3,
        plan.steps.back().step_after_us / 1e3,
        plan.step_before_us > 0
            ? 100 * (plan.step_before_us - plan.steps.back().step_after_us) / plan.step_before_us
            : 0.0);
  if (!add_nothing.empty()) {
    std::string names;
    for (const auto& [name, alone] : add_nothing) {
      std::string figures;
      for (const double us : alone)
        figures += fmt::format("{}-{:.2f}", figures.empty() ? "" : ", ", us / 1e3);
      names += fmt::format("{}{} (alone: {} ms)", names.empty() ? "" : "; ", name, figures);
    }
    out += fmt::format("  adds nothing once those above are made: {}\n", names);
  }
  for (const PlanStep& s : plan.not_replayed)
    out += fmt::format("  beside them, not joined (no what-if replays it): {} -{:.2f} ms alone\n",
                       insights[s.finding].rule, s.alone_saving_us / 1e3);
  return out;
}

}  // namespace jarvis::insights
