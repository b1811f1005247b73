// run_under_shim (shim_run.h).
#include "ab/shim_run.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace jarvis::ab {
namespace {

std::string shim_error_text(const std::string& command, const std::string& what,
                            const std::string& log_path) {
  std::string tail = log_tail(log_path);
  return fmt::format("`{}`: {} (log: {}){}", command, what, log_path,
                     tail.empty() ? "" : "\n--- end of its output ---\n" + tail);
}

std::vector<double> number_list(const nlohmann::json& j, const char* key) {
  std::vector<double> out;
  if (auto it = j.find(key); it != j.end() && it->is_array())
    for (const auto& v : *it)
      if (v.is_number()) out.push_back(v.get<double>());
  return out;
}

}  // namespace

ShimResult run_under_shim(const std::string& command, const EnvList& env,
                          const std::string& shim_dir, const std::string& mode,
                          const ShimSettings& s, const std::string& result_path,
                          const std::string& trace_path, const std::string& log_path) {
  std::filesystem::remove(result_path);
  EnvList all = env;
  const char* old_path = std::getenv("PYTHONPATH");
  std::string python_path = shim_dir;
  for (const auto& [k, v] : env)  // an arm's own PYTHONPATH goes after the shim
    if (k == "PYTHONPATH") python_path += ":" + v;
  if (old_path && *old_path) python_path += std::string(":") + old_path;
  all.emplace_back("PYTHONPATH", python_path);
  all.emplace_back("JARVIS_AB_OUT", result_path);
  all.emplace_back("JARVIS_AB_MODE", mode);
  all.emplace_back("JARVIS_AB_WARMUP", std::to_string(s.warmup));
  all.emplace_back("JARVIS_AB_WINDOW", std::to_string(s.window));
  all.emplace_back("JARVIS_AB_WINDOWS", std::to_string(s.windows));
  all.emplace_back("JARVIS_AB_PROFILE_STEPS", std::to_string(s.profile_steps));
  all.emplace_back("JARVIS_AB_PROFILER", fmt::format("{}", fmt::join(s.profiler, ",")));
  all.emplace_back("JARVIS_AB_TRACE", mode == kModeProfile ? trace_path : "");
  all.emplace_back("JARVIS_AB_STEP_FN", s.step_fn);
  all.emplace_back("JARVIS_AB_EXIT_WHEN_DONE", s.keep_running ? "0" : "1");
  const CommandRun run = run_shell(command, all, log_path, s.timeout_s);
  if (run.timed_out)
    throw AbError(shim_error_text(
        command, fmt::format("still running after {:.0f} s (--timeout)", s.timeout_s), log_path));
  std::ifstream in(result_path);
  if (!in) {
    throw AbError(shim_error_text(
        command,
        run.exit_code != 0
            ? fmt::format("exited with status {} before the shim wrote its result", run.exit_code)
            : "the shim wrote no result: is it a Python program that imports torch, and does "
              "its python3 honour PYTHONPATH (a `python -S` or `-I` run does not)?",
        log_path));
  }
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (!j.is_object())
    throw AbError(shim_error_text(command, "the shim's result is not JSON", log_path));
  if (!j.value("complete", false))
    throw AbError(shim_error_text(command, j.value("reason", std::string("incomplete")), log_path));
  if (run.exit_code != 0 && s.keep_running)
    throw AbError(
        shim_error_text(command, fmt::format("exited with status {}", run.exit_code), log_path));
  ShimResult r;
  r.step_source = j.value("step_source", "");
  r.window_step_ms = number_list(j, "window_step_ms");
  r.profiled_step_ms = number_list(j, "profiled_step_ms");
  r.host_step_ms = number_list(j, "host_step_ms");
  if (j.contains("step_ms_median") && j["step_ms_median"].is_number())
    r.step_ms = j["step_ms_median"].get<double>();
  r.shim_us_per_step = j.value("shim_us_per_step", 0.0);
  r.user_profiler = j.value("user_profiler", false);
  r.trace = j.value("trace", "");
  if (auto h = j.find("host"); h != j.end() && h->is_object()) {
    r.host.hostname = h->value("hostname", "");
    r.host.cpu_model = h->value("cpu_model", "");
    r.host.torch = h->value("torch", "");
    r.device = h->value("device", "");
  }
  r.wall_s = run.wall_s;
  if (mode == kModeProfile && (r.trace.empty() || !std::filesystem::exists(r.trace)))
    throw AbError(shim_error_text(command, "the profiled run wrote no trace", log_path));
  return r;
}

}  // namespace jarvis::ab
