// jarvis calibrate (calibrate.h).
#include "ab/calibrate.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <future>
#include <numeric>

#include <fmt/format.h>

#include "ab/shim.h"
#include "explore/input_format.h"
#include "tree/call_tree.h"

namespace jarvis::ab {
namespace fs = std::filesystem;
namespace {

double calibrate_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

constexpr double kMaxCostInGaps = 100;   // a fit past this is not a per-event cost
constexpr size_t kMinMeasuredGaps = 20;  // as the critical path's measure_op_gap
// Paired: the profiled process records as many steps as the clean one times,
// up to this many (a step of the built-in workload is ~500 events).
constexpr int kPairedSteps = 60;

double fitted_gaps(double excess_us, double gap_us, double events, double fallback,
                   const std::string& what, std::vector<std::string>& notes) {
  if (!(events > 0) || !(gap_us > 0)) {
    notes.push_back(
        fmt::format("{}: none recorded per step; the built-in {:.2f} gaps kept", what, fallback));
    return fallback;
  }
  const double k = excess_us / (gap_us * events);
  if (!(k >= 0)) {
    notes.push_back(
        fmt::format("{}: the profiled step was not slower than the clean one ({:.1f} us): 0 gaps",
                    what, excess_us));
    return 0;
  }
  return std::min(k, kMaxCostInGaps);
}

std::string today_utc() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string file_safe(const std::string& s) {
  std::string out;
  for (char c : s)
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_';
  return out.empty() ? "host" : out;
}

}  // namespace

std::vector<SettingFit> calibration_settings() {
  std::vector<SettingFit> s(4);
  s[0].name = "plain";
  s[1].name = "shapes";
  s[1].profiler = {"record_shapes"};
  s[2].name = "shapes_stack";
  s[2].profiler = {"record_shapes", "with_stack"};
  s[3].name = "shapes_memory";
  s[3].profiler = {"record_shapes", "profile_memory"};
  return s;
}

void fit_model(Calibration& c) {
  critical_path::ProfilerCostModel m;  // built in, refined below
  // A profiler without Kineto records whole microseconds: back-to-back ops
  // show no gap, so the costs are fitted in microseconds (a gap of 1 us),
  // which the estimate of this host's traces then uses as their gap.
  const bool no_gap = std::any_of(c.settings.begin(), c.settings.end(), [](const SettingFit& s) {
    return s.events.gaps_measured < kMinMeasuredGaps || !(s.events.op_gap_us > 0);
  });
  if (no_gap) {
    for (auto& s : c.settings) s.events.op_gap_us = 1.0;
    m.fallback_op_gap_us = 1.0;
    c.notes.push_back(
        "the traces show no op gap (a profiler without Kineto records whole microseconds): costs "
        "fitted in microseconds, and this host's traces without a measurable gap use 1 us");
  }
  auto find = [&](const char* name) -> SettingFit* {
    for (auto& s : c.settings)
      if (s.name == name) return &s;
    return nullptr;
  };
  // Runtime calls (CUPTI) cost the built-in gaps; a GPU run's share of each
  // setting's excess is taken out before the host events are fitted.
  auto runtime_us = [&](const StepEvents& e) {
    return m.runtime_call_gaps * e.op_gap_us * e.runtime_calls;
  };
  auto shapes_us = [&](const StepEvents& e) {
    return (m.shapes_op_gaps * e.ops + m.shapes_input_gaps * e.inputs) * e.op_gap_us;
  };
  if (SettingFit* plain = find("plain"))
    m.op_gaps = fitted_gaps(plain->excess_us - runtime_us(plain->events), plain->events.op_gap_us,
                            plain->events.ops, m.op_gaps, "op (plain)", c.notes);
  if (SettingFit* shapes = find("shapes")) {
    // One factor on both shapes costs: one setting cannot tell per-op from
    // per-input cost apart, so their built-in ratio is kept.
    const double built_in = shapes_us(shapes->events);
    const double scale = built_in > 0
                             ? fitted_gaps(shapes->excess_us - runtime_us(shapes->events), 1.0,
                                           built_in, 1.0, "op and input (record_shapes)", c.notes)
                             : 1.0;
    m.shapes_op_gaps *= scale;
    m.shapes_input_gaps *= scale;
  }
  if (SettingFit* stack = find("shapes_stack"))
    m.python_frame_gaps =
        fitted_gaps(stack->excess_us - runtime_us(stack->events) - shapes_us(stack->events),
                    stack->events.op_gap_us, stack->events.python_frames, m.python_frame_gaps,
                    "Python frame (with_stack)", c.notes);
  if (SettingFit* memory = find("shapes_memory"))
    m.memory_event_gaps =
        fitted_gaps(memory->excess_us - runtime_us(memory->events) - shapes_us(memory->events),
                    memory->events.op_gap_us, memory->events.memory_events, m.memory_event_gaps,
                    "[memory] event (profile_memory)", c.notes);
  m.source = "this host's (fitted now)";
  c.model = m;
}

Calibration run_calibration(const CalibrateOptions& o,
                            const std::function<void(const std::string&)>& progress) {
  if (o.runs < 1) throw UsageError("--runs: at least 1 clean process");
  const fs::path dir = o.work_dir;
  fs::create_directories(dir);
  const std::string shim_dir = write_shim((dir / ".shim").string());
  const std::string command =
      o.command.empty()
          ? fmt::format("'{}' '{}'", o.python, (fs::path(shim_dir) / kWorkloadScript).string())
          : o.command;
  Calibration c;
  c.date = today_utc();
  for (int r = 0; r < o.runs; ++r) {
    if (progress) progress(fmt::format("clean run {}/{}", r + 1, o.runs));
    const ShimResult res = run_under_shim(command, {}, shim_dir, kModeClean, o.shim,
                                          (dir / fmt::format("clean_{}.json", r + 1)).string(), "",
                                          (dir / fmt::format("clean_{}.log", r + 1)).string());
    c.clean_runs_us.push_back(res.step_ms * 1e3);
    c.host = res.host;
    c.device = res.device;
  }
  c.clean_step_us = std::accumulate(c.clean_runs_us.begin(), c.clean_runs_us.end(), 0.0) /
                    static_cast<double>(c.clean_runs_us.size());
  c.settings = calibration_settings();
  for (SettingFit& s : c.settings) {
    if (progress)
      progress(fmt::format("profiled run: {}{}", s.name, o.paired ? ", beside a clean one" : ""));
    ShimSettings shim = o.shim;
    shim.profiler = s.profiler;
    EnvList env;
    std::future<ShimResult> beside;
    if (o.paired) {
      // A clean process started with the profiled one, both waiting for the
      // other after the warm-up (the shim's barrier): their steps run over
      // the same seconds, so the machine's load falls on both, and the
      // profiled process records as many steps as the clean one times.
      const fs::path barrier = dir / (s.name + ".barrier");
      fs::remove_all(barrier);
      env = {{"JARVIS_AB_BARRIER", barrier.string()}, {"JARVIS_AB_BARRIER_N", "2"}};
      shim.profile_steps =
          std::max(shim.profile_steps, std::min(o.shim.window * o.shim.windows, kPairedSteps));
      beside = std::async(std::launch::async, [&, env] {
        return run_under_shim(command, env, shim_dir, kModeClean, o.shim,
                              (dir / (s.name + ".clean.json")).string(), "",
                              (dir / (s.name + ".clean.log")).string());
      });
    }
    const ShimResult res = run_under_shim(
        command, env, shim_dir, kModeProfile, shim, (dir / (s.name + ".json")).string(),
        (dir / (s.name + ".trace.json.gz")).string(), (dir / (s.name + ".log")).string());
    if (o.paired) {
      // The median step, as the profiled trace's (step_events): a step that
      // another process's time slice fell into moves a window's mean, not
      // the median.
      const ShimResult clean = beside.get();
      s.clean_beside_us =
          (clean.host_step_ms.empty() ? clean.step_ms : calibrate_median(clean.host_step_ms)) * 1e3;
    }
    s.trace = res.trace;
    Trace trace = load_any_trace(s.trace);
    CallTree tree(trace);
    auto events = step_events(trace, tree);
    if (!events)
      throw AbError(fmt::format("{}: the {} trace has no ProfilerStep#N", s.trace, s.name));
    s.events = *events;
    s.excess_us = s.events.recorded_step_us - (o.paired ? s.clean_beside_us : c.clean_step_us);
  }
  fit_model(c);
  // Each trace estimated again, with the fit and with the built-in model.
  for (SettingFit& s : c.settings) {
    Trace trace = load_any_trace(s.trace);
    CallTree tree(trace);
    if (auto fitted = host_only_step(trace, tree, c.model))
      s.estimated_fitted_us = fitted->estimated_unprofiled_step_us;
    if (auto built_in = host_only_step(trace, tree, critical_path::ProfilerCostModel{}))
      s.estimated_builtin_us = built_in->estimated_unprofiled_step_us;
  }
  return c;
}

nlohmann::json calibration_json(const Calibration& c) {
  nlohmann::json settings = nlohmann::json::array();
  for (const SettingFit& s : c.settings)
    settings.push_back({{"setting", s.name},
                        {"profiler", s.profiler},
                        {"trace", s.trace},
                        {"recorded_step_us", s.events.recorded_step_us},
                        {"excess_us", s.excess_us},
                        {"clean_beside_us", s.clean_beside_us},
                        {"op_gap_us", s.events.op_gap_us},
                        {"ops_per_step", s.events.ops},
                        {"inputs_per_step", s.events.inputs},
                        {"runtime_calls_per_step", s.events.runtime_calls},
                        {"python_frames_per_step", s.events.python_frames},
                        {"memory_events_per_step", s.events.memory_events},
                        {"estimated_unprofiled_step_us", s.estimated_fitted_us},
                        {"estimated_unprofiled_step_us_builtin", s.estimated_builtin_us}});
  const auto& m = c.model;
  return {
      {"jarvis_calibration", 1},
      {"host",
       {{"hostname", c.host.hostname}, {"cpu_model", c.host.cpu_model}, {"torch", c.host.torch}}},
      {"device", c.device},
      {"date", c.date},
      {"clean_step_us", c.clean_step_us},
      {"clean_runs_us", c.clean_runs_us},
      {"model",
       {{"op_gaps", m.op_gaps},
        {"shapes_op_gaps", m.shapes_op_gaps},
        {"shapes_input_gaps", m.shapes_input_gaps},
        {"runtime_call_gaps", m.runtime_call_gaps},
        {"python_frame_gaps", m.python_frame_gaps},
        {"xla_python_frame_gaps", m.xla_python_frame_gaps},
        {"memory_event_gaps", m.memory_event_gaps},
        {"fallback_op_gap_us", m.fallback_op_gap_us}}},
      {"settings", settings},
      {"notes", c.notes}};
}

std::string default_calibration_path(const critical_path::HostKey& host) {
  uint32_t h = 2166136261u;  // FNV-1a: the same name on every build
  for (unsigned char ch : host.cpu_model + '\n' + host.torch) h = (h ^ ch) * 16777619u;
  return (fs::path(critical_path::calibration_dir()) /
          fmt::format("{}-{:08x}.json", file_safe(host.hostname), h))
      .string();
}

}  // namespace jarvis::ab
