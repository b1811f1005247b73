// jarvis ab (ab.h): the arms' runs, truth.json in and out, the prediction
// from arm A's trace and the table.
#include "ab/ab.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include <fmt/format.h>

#include "ab/change_match.h"
#include "ab/host_step.h"
#include "ab/shim.h"
#include "explore/input_format.h"
#include "explore/trace_store.h"
#include "insights/insights.h"
#include "perf/gpu_arch.h"
#include "tree/call_tree.h"

namespace jarvis::ab {
namespace fs = std::filesystem;
namespace {

double ab_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double ab_mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

std::optional<double> ab_number(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// One arm of a truth.json experiment.
Arm arm_from_truth(const std::string& key, const nlohmann::json& j, const fs::path& folder) {
  Arm a;
  a.key = key;
  if (auto it = j.find("step_ms_clean_runs"); it != j.end() && it->is_array())
    for (const auto& v : *it)
      if (v.is_number()) a.clean_runs_ms.push_back(v.get<double>());
  a.step_ms_clean = ab_number(j, "step_ms_clean").value_or(ab_mean(a.clean_runs_ms));
  a.step_ms_median = ab_number(j, "step_ms_median");
  a.step_ms_min = ab_number(j, "step_ms_min");
  a.step_ms_max = ab_number(j, "step_ms_max");
  a.steps_per_rep = static_cast<size_t>(ab_number(j, "steps_per_rep").value_or(0));
  a.reps = static_cast<size_t>(ab_number(j, "reps").value_or(0));
  a.trace = j.value("trace", "");
  if (!a.trace.empty()) a.trace_path = (folder / a.trace).string();
  a.shim_us_per_step = ab_number(j, "shim_us_per_step").value_or(0);
  return a;
}

std::string rel_to(const std::string& path, const std::string& base) {
  std::error_code ec;
  auto rel = fs::relative(path, base, ec);
  return ec || rel.empty() ? path : rel.string();
}

}  // namespace

double Pair::band_low_ms() const {
  const auto& ar = a.clean_runs_ms.empty() ? std::vector<double>{a.step_ms_clean} : a.clean_runs_ms;
  const auto& br = b.clean_runs_ms.empty() ? std::vector<double>{b.step_ms_clean} : b.clean_runs_ms;
  return *std::min_element(ar.begin(), ar.end()) - *std::max_element(br.begin(), br.end());
}

double Pair::band_high_ms() const {
  const auto& ar = a.clean_runs_ms.empty() ? std::vector<double>{a.step_ms_clean} : a.clean_runs_ms;
  const auto& br = b.clean_runs_ms.empty() ? std::vector<double>{b.step_ms_clean} : b.clean_runs_ms;
  return *std::max_element(ar.begin(), ar.end()) - *std::min_element(br.begin(), br.end());
}

std::string Pair::verdict() const {
  if (!above_noise()) return "noise";
  return measured_saving_ms() < 0 ? "B slower" : "B faster";
}

std::optional<double> Pair::ratio() const {
  if (!prediction.available || std::abs(prediction.saving_ms_per_step) <= 1e-9 ||
      measured_saving_ms() <= 0)
    return std::nullopt;
  return measured_saving_ms() / prediction.saving_ms_per_step;
}

std::vector<Pair> load_truth(const std::string& path, std::vector<std::string>* skipped) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw AbError(fmt::format("{}: cannot read it", path));
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (!j.is_object())
    throw AbError(
        fmt::format("{}: not a truth.json (a JSON object of experiments, as "
                    "../shared/ab_pairs/truth.json and `jarvis ab` write)",
                    path));
  const fs::path folder = fs::path(path).parent_path();
  std::vector<Pair> pairs;
  for (const auto& entry : j.items()) {
    // Named, not a structured binding: the lambda below captures it (clang 14).
    const std::string name = entry.key();
    const nlohmann::json& exp = entry.value();
    if (name.starts_with("_") || !exp.is_object()) continue;
    std::optional<std::string> a_key, b_key;
    for (const auto& [key, arm] : exp.items()) {
      if (!arm.is_object()) continue;
      if (key.starts_with("A_") && !a_key) a_key = key;
      if (key.starts_with("B_") && !b_key) b_key = key;
    }
    auto skip = [&](const std::string& why) {
      if (skipped) skipped->push_back(fmt::format("{}: {}", name, why));
    };
    if (!a_key || !b_key) {
      skip("not a pair (no A_ and B_ arm)");
      continue;
    }
    if (!exp[*a_key].contains("step_ms_clean") || !exp[*b_key].contains("step_ms_clean")) {
      skip("no clean timings (step_ms_clean) to measure the saving on");
      continue;
    }
    Pair p;
    p.name = name;
    p.changed = exp.value("changed", "");
    p.a = arm_from_truth(*a_key, exp[*a_key], folder);
    p.b = arm_from_truth(*b_key, exp[*b_key], folder);
    pairs.push_back(std::move(p));
  }
  if (pairs.empty() && (!skipped || skipped->empty()))
    throw AbError(fmt::format("{}: no experiment with A_ and B_ arms", path));
  return pairs;
}

Pair run_ab(const AbOptions& o, const std::function<void(const std::string&)>& progress) {
  if (o.runs < 2) throw UsageError("--runs: at least 2 clean processes per arm");
  const fs::path out = o.out;
  fs::create_directories(out / "A");
  fs::create_directories(out / "B");
  const std::string shim_dir = write_shim((out / ".shim").string());
  Pair p;
  p.name = o.name;
  p.changed = o.changed.empty() ? fmt::format("A: `{}`; B: `{}`", o.a, o.b) : o.changed;
  p.a.key = "A_" + o.label_a;
  p.b.key = "B_" + o.label_b;
  p.a.command = o.a;
  p.b.command = o.b;
  struct Side {
    Arm* arm;
    const std::string* command;
    const EnvList* env;
    const char* dir;
  };
  const Side sides[] = {{&p.a, &o.a, &o.env_a, "A"}, {&p.b, &o.b, &o.env_b, "B"}};
  // Clean processes alternate between the arms, so a drift of the machine
  // (another job, the clock) falls on both.
  for (int r = 0; r < o.runs; ++r) {
    for (const Side& s : sides) {
      if (progress) progress(fmt::format("{} clean run {}/{}", s.dir, r + 1, o.runs));
      const fs::path folder = out / s.dir;
      const ShimResult res =
          run_under_shim(*s.command, *s.env, shim_dir, kModeClean, o.shim,
                         (folder / fmt::format("clean_{}.json", r + 1)).string(), "",
                         (folder / fmt::format("clean_{}.log", r + 1)).string());
      s.arm->clean_runs_ms.push_back(res.step_ms);
      s.arm->clean_windows_ms.push_back(res.window_step_ms);
      s.arm->shim_us_per_step = std::max(s.arm->shim_us_per_step, res.shim_us_per_step);
    }
  }
  for (const Side& s : sides) {
    if (progress) progress(fmt::format("{} profiled run", s.dir));
    const fs::path folder = out / s.dir;
    const ShimResult res = run_under_shim(
        *s.command, *s.env, shim_dir, kModeProfile, o.shim, (folder / "profiled.json").string(),
        (folder / "trace.json.gz").string(), (folder / "profiled.log").string());
    Arm& arm = *s.arm;
    arm.step_ms_clean = ab_mean(arm.clean_runs_ms);
    arm.steps_per_rep = static_cast<size_t>(o.shim.window);
    arm.reps = static_cast<size_t>(o.shim.windows);
    if (!res.profiled_step_ms.empty()) {
      arm.step_ms_median = ab_median(res.profiled_step_ms);
      arm.step_ms_min = *std::min_element(res.profiled_step_ms.begin(), res.profiled_step_ms.end());
      arm.step_ms_max = *std::max_element(res.profiled_step_ms.begin(), res.profiled_step_ms.end());
    }
    arm.trace_path = res.trace;
    arm.trace = rel_to(res.trace, out.string());
  }
  return p;
}

namespace {

// The floor under which a finding's gone work is a rounding of the step: 1 %
// of arm A's clean step (else its recorded one), at least 5 us.
double change_floor_ms(const Pair& pair, std::optional<double> recorded_ms) {
  const double step = pair.a.step_ms_clean > 0 ? pair.a.step_ms_clean : recorded_ms.value_or(0);
  return std::max(0.005, 0.01 * step);
}

// The CPU arm: the host-only model's Python time outside the recorded ops.
void predict_host_only(Pair& pair, const Trace& trace, const CallTree& tree,
                       const critical_path::ProfilerCostModel& model) {
  Prediction& pr = pair.prediction;
  const auto host = host_only_step(trace, tree, model);
  if (!host) {
    pr.note = "a CPU trace without ProfilerStep#N: no step to size";
    return;
  }
  pr.available = true;
  pr.finding = "host_untraced_python";
  pr.title =
      fmt::format("{:.3f} ms per step of host time outside the recorded ops (Python between them)",
                  host->untraced_us_per_step / 1e3);
  pr.saving_ms_per_step = host->untraced_us_per_step / 1e3;
  pr.method =
      "host-only model (CPU trace): the step's Python time between its ops, "
      "without the profiler's records; an upper bound for a change that removes "
      "part of it";
  pr.estimated_unprofiled_step_ms = host->estimated_unprofiled_step_us / 1e3;
  pr.recorded_step_ms = host->recorded_step_us / 1e3;
  pr.chosen_by = "host-only";
  pr.chosen_why = "a CPU trace: no GPU finding, the host-only model";
  if (pair.b.trace_path.empty()) return;
  try {
    Trace b = load_any_trace(pair.b.trace_path);
    CallTree b_tree(b);
    if (const auto bh = host_only_step(b, b_tree, critical_path::profiler_cost_model_for(b))) {
      const double a_ms = host->untraced_us_per_step / 1e3, b_ms = bh->untraced_us_per_step / 1e3;
      pr.chosen_why += fmt::format(
          "; its Python time outside recorded ops: {:.3f} ms a step in A, {:.3f} in B", a_ms, b_ms);
      if (a_ms > 0 && (a_ms - b_ms) / a_ms >= kGoneShare)
        pr.gone_in_b.push_back({{"rule", pr.finding},
                                {"a_ms_per_step", a_ms},
                                {"b_ms_per_step", b_ms},
                                {"gone_share", (a_ms - b_ms) / a_ms}});
    }
  } catch (const std::exception& e) {
    pr.chosen_why += fmt::format("; arm B's trace not read ({})", e.what());
  }
}

}  // namespace

void predict(Pair& pair, const std::string& rule) {
  Prediction& pr = pair.prediction;
  pr = Prediction{};
  if (pair.a.trace_path.empty()) {
    pr.note = "arm A has no trace";
    return;
  }
  try {
    Trace trace = load_any_trace(pair.a.trace_path);
    CallTree tree(trace);
    const critical_path::ProfilerCostModel model = critical_path::profiler_cost_model_for(trace);
    pr.calibration = model.source;
    if (!has_gpu_work(trace)) {
      // A CPU trace: no dependency graph, no GPU finding. The host-only model
      // sizes the Python time between the step's recorded ops (what a batch
      // prepared in Python, a per-step .item() loop or the loop itself costs).
      predict_host_only(pair, trace, tree, model);
      return;
    }
    const std::string arch_name = detect_arch_name(trace);
    std::optional<perf::GpuArch> arch;
    if (!arch_name.empty()) arch = perf::load_gpu_arch(arch_name);
    const auto context = insights::make_context(trace, tree, arch ? &*arch : nullptr);
    if (context.step) {
      pr.estimated_unprofiled_step_ms = context.step->measured.step_time_us / 1e3;
      pr.recorded_step_ms = context.step->measured.recorded_step_time_us / 1e3;
    }
    auto found = insights::run_insights(context);
    std::stable_sort(found.begin(), found.end(), [](const auto& x, const auto& y) {
      return insights::ranking_saving_us(x) > insights::ranking_saving_us(y);
    });
    if (found.empty()) {
      pr.note = "no finding in arm A's trace";
      return;
    }
    const insights::Insight* chosen = nullptr;
    // Arm B's trace against every finding: what B no longer runs.
    std::optional<FootprintChange> match;
    std::string b_unread;
    if (!pair.b.trace_path.empty()) {
      try {
        Trace b = load_any_trace(pair.b.trace_path);
        CallTree b_tree(b);
        const auto changes = footprint_changes(trace, tree, found, b, b_tree);
        for (const auto& c : changes)
          if (c.gone_share() >= kGoneShare)
            pr.gone_in_b.push_back({{"rule", c.rule},
                                    {"work", c.kernels ? "kernels" : "host ops"},
                                    {"a_ms_per_step", c.a_ms_per_step},
                                    {"b_ms_per_step", c.b_ms_per_step},
                                    {"a_events_per_step", c.a_events_per_step},
                                    {"b_events_per_step", c.b_events_per_step},
                                    {"gone_share", c.gone_share()}});
        match = change_finding(changes, change_floor_ms(pair, pr.recorded_step_ms));
      } catch (const std::exception& e) {
        b_unread = e.what();
      }
    }
    if (!rule.empty() && rule != "top") {
      for (const auto& i : found)
        if (i.rule == rule) {
          chosen = &i;
          break;
        }
      if (!chosen) {
        pr.note = fmt::format("no {} finding in arm A's trace", rule);
        return;
      }
      pr.chosen_by = "--finding";
      pr.chosen_why = fmt::format("named with --finding {}", rule);
    } else if (rule.empty() && match) {
      chosen = &found[match->index];
      pr.chosen_by = "arm B";
      pr.chosen_why =
          match->kernels
              ? fmt::format(
                    "its kernels' time is {:.0f} % gone in arm B ({:.3f} ms a step in A, {:.3f} "
                    "in B)",
                    100 * match->gone_share(), match->a_ms_per_step, match->b_ms_per_step)
              : fmt::format(
                    "{:.0f} % of its ops are gone in arm B ({:.1f} a step in A, {:.1f} in B; "
                    "{:.3f} ms a step in A, {:.3f} in B)",
                    100 * match->gone_share(), match->a_events_per_step, match->b_events_per_step,
                    match->a_ms_per_step, match->b_ms_per_step);
    } else {
      chosen = &found.front();
      pr.chosen_by = "top";
      pr.chosen_why = rule == "top"               ? "the top finding (--finding top)"
                      : pair.b.trace_path.empty() ? "the top finding (arm B has no trace to match)"
                      : !b_unread.empty()
                          ? fmt::format("the top finding (arm B's trace: {})", b_unread)
                          : "the top finding: no finding's ops or kernels are gone "
                            "in arm B, so none stands for the change";
    }
    const double steps = static_cast<double>(std::max<size_t>(1, chosen->steps));
    pr.available = true;
    pr.finding = chosen->rule;
    pr.title = chosen->title;
    pr.saving_ms_per_step = insights::ranking_saving_us(*chosen) / steps / 1e3;
    pr.method = chosen->step_saving_us
                    ? "what-if on the critical path without the profiler (the finding's step "
                      "saving)"
                    : "the finding's recoverable time (no what-if sized it)";
    pr.what_if = chosen->what_if;
    if (!chosen->step_saving_note.empty()) pr.note = chosen->step_saving_note;
  } catch (const std::exception& e) {
    pr.available = false;
    pr.note = fmt::format("arm A's trace gave no prediction: {}", e.what());
  }
}

nlohmann::json truth_json(const std::vector<Pair>& pairs, const std::string& device,
                          const std::string& torch) {
  nlohmann::json j = nlohmann::json::object();
  j["_device"] = device;
  j["_torch"] = torch;
  auto arm_json = [](const Arm& a) {
    nlohmann::json x = nlohmann::json::object();
    if (a.step_ms_median) x["step_ms_median"] = *a.step_ms_median;
    if (a.step_ms_min) x["step_ms_min"] = *a.step_ms_min;
    if (a.step_ms_max) x["step_ms_max"] = *a.step_ms_max;
    x["steps_per_rep"] = a.steps_per_rep;
    x["reps"] = a.reps;
    if (!a.trace.empty()) x["trace"] = a.trace;
    x["step_ms_clean_runs"] = a.clean_runs_ms;
    x["step_ms_clean"] = a.step_ms_clean;
    if (!a.clean_windows_ms.empty()) x["step_ms_clean_windows"] = a.clean_windows_ms;
    if (!a.command.empty()) x["command"] = a.command;
    x["shim_us_per_step"] = a.shim_us_per_step;
    return x;
  };
  for (const Pair& p : pairs) {
    j[p.name][p.a.key] = arm_json(p.a);
    j[p.name][p.b.key] = arm_json(p.b);
    j[p.name]["changed"] = p.changed;
  }
  j["_timing"] =
      "jarvis ab: step_ms_median/min/max: the profiled process's steps under the profiler "
      "(host wall clock, not the truth). step_ms_clean_runs: one per process the profiler never "
      "touched, the median of its windows of steps_per_rep steps (wall clock, the device "
      "synchronised at each window's end, after the warm-up steps); step_ms_clean is their mean: "
      "the un-profiled truth, the runs its noise. shim_us_per_step: the step timer's own cost "
      "per step (included in the clean times).";
  return j;
}

nlohmann::json table_json(const std::vector<Pair>& pairs) {
  nlohmann::json rows = nlohmann::json::array();
  for (const Pair& p : pairs) {
    const Prediction& pr = p.prediction;
    nlohmann::json r = {{"experiment", p.name},
                        {"changed", p.changed},
                        {"a_step_ms_clean", p.a.step_ms_clean},
                        {"b_step_ms_clean", p.b.step_ms_clean},
                        {"measured_saving_ms", p.measured_saving_ms()},
                        {"noise_band_ms", {p.band_low_ms(), p.band_high_ms()}},
                        {"above_noise", p.above_noise()},
                        {"verdict", p.verdict()},
                        {"prediction_available", pr.available},
                        {"finding", pr.finding},
                        {"finding_title", pr.title},
                        {"finding_chosen_by", pr.chosen_by},
                        {"finding_chosen_why", pr.chosen_why},
                        {"gone_in_b", pr.gone_in_b},
                        {"method", pr.method},
                        {"what_if", pr.what_if},
                        {"calibration", pr.calibration},
                        {"note", pr.note}};
    r["predicted_saving_ms"] = pr.available ? nlohmann::json(pr.saving_ms_per_step) : nullptr;
    const auto ratio = p.ratio();
    r["ratio_measured_to_predicted"] = ratio ? nlohmann::json(*ratio) : nullptr;
    r["a_estimated_unprofiled_step_ms"] = pr.estimated_unprofiled_step_ms
                                              ? nlohmann::json(*pr.estimated_unprofiled_step_ms)
                                              : nullptr;
    r["a_recorded_step_ms"] = pr.recorded_step_ms ? nlohmann::json(*pr.recorded_step_ms) : nullptr;
    r["shim_us_per_step"] = std::max(p.a.shim_us_per_step, p.b.shim_us_per_step);
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string table_markdown(const std::vector<Pair>& pairs) {
  std::string md =
      "| experiment | A clean ms | B clean ms | measured A-B ms (band) | predicted ms | finding "
      "(chosen by) | measured/predicted | A un-profiled est. ms |\n"
      "|---|---:|---:|---:|---:|---|---:|---:|\n";
  for (const Pair& p : pairs) {
    const Prediction& pr = p.prediction;
    const std::string verdict = p.verdict();
    const auto ratio = p.ratio();
    std::string ratio_text = "-";
    if (verdict == "B slower")
      ratio_text = "none: B slower";
    else if (ratio)
      ratio_text = fmt::format("{:.2f}{}", *ratio, verdict == "noise" ? " (noise)" : "");
    md += fmt::format(
        "| {} | {:.3f} | {:.3f} | {:.3f} ({:.3f} .. {:.3f}){} | {} | {} | {} | {} |\n", p.name,
        p.a.step_ms_clean, p.b.step_ms_clean, p.measured_saving_ms(), p.band_low_ms(),
        p.band_high_ms(), verdict == "B faster" ? "" : " " + verdict,
        pr.available ? fmt::format("{:.3f}", pr.saving_ms_per_step) : "-",
        pr.available ? fmt::format("{} ({})", pr.finding, pr.chosen_by) : "none", ratio_text,
        pr.estimated_unprofiled_step_ms ? fmt::format("{:.3f}", *pr.estimated_unprofiled_step_ms)
                                        : "-");
  }
  return md;
}

}  // namespace jarvis::ab
