// Which profiler-cost model a trace's un-profiled estimate uses
// (calibration.h; the files are written by `jarvis calibrate`, src/ab/).
#include "critical_path/calibration.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace jarvis::critical_path {
namespace {

namespace fs = std::filesystem;

std::mutex& calibration_mutex() {
  static std::mutex m;
  return m;
}

// The forced model (set by --calibration) and the models found per host.
std::optional<ProfilerCostModel>& forced_model() {
  static std::optional<ProfilerCostModel> m;
  return m;
}

std::map<std::string, ProfilerCostModel>& models_by_host() {
  static std::map<std::string, ProfilerCostModel> m;
  return m;
}

std::string host_cache_key(const HostKey& h) {
  return h.hostname + '\n' + h.cpu_model + '\n' + h.torch + '\n' + calibration_dir();
}

double calibration_number(const nlohmann::json& model, const char* key, double fallback,
                          const std::string& path) {
  if (!model.contains(key)) return fallback;
  const auto& v = model.at(key);
  if (!v.is_number() || !(v.get<double>() >= 0) || v.get<double>() > 1e3)
    throw CalibrationError(fmt::format(
        "{}: model.{} is not a cost in op gaps (a number from 0 to 1000): rerun jarvis calibrate",
        path, key));
  return v.get<double>();
}

}  // namespace

std::optional<HostKey> trace_host(const Trace& trace) {
  for (const auto& [key, text] : trace.top_level_json) {
    if (key != "jarvis_host") continue;
    const auto j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object()) return std::nullopt;
    auto field = [&](const char* name) {
      auto it = j.find(name);
      return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    HostKey h{field("hostname"), field("cpu_model"), field("torch")};
    if (h.hostname.empty() && h.cpu_model.empty()) return std::nullopt;
    return h;
  }
  return std::nullopt;
}

std::string calibration_dir() {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
  };
  fs::path base;
  if (std::string d = env("JARVIS_CONFIG_DIR"); !d.empty())
    base = d;
  else if (std::string x = env("XDG_CONFIG_HOME"); !x.empty())
    base = fs::path(x) / "jarvis";
  else if (std::string home = env("HOME"); !home.empty())
    base = fs::path(home) / ".config" / "jarvis";
  else
    base = fs::path(".jarvis");
  return (base / "calibration").string();
}

StoredCalibration read_calibration(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CalibrationError(fmt::format("{}: cannot read the calibration file", path));
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (!j.is_object() || !j.contains("jarvis_calibration") || !j.contains("model") ||
      !j.at("model").is_object())
    throw CalibrationError(fmt::format(
        "{}: not a jarvis calibration (a JSON object with jarvis_calibration and model, as "
        "`jarvis calibrate` writes)",
        path));
  StoredCalibration c;
  const auto& m = j.at("model");
  const ProfilerCostModel d;
  c.model.op_gaps = calibration_number(m, "op_gaps", d.op_gaps, path);
  c.model.shapes_op_gaps = calibration_number(m, "shapes_op_gaps", d.shapes_op_gaps, path);
  c.model.shapes_input_gaps = calibration_number(m, "shapes_input_gaps", d.shapes_input_gaps, path);
  c.model.runtime_call_gaps = calibration_number(m, "runtime_call_gaps", d.runtime_call_gaps, path);
  c.model.python_frame_gaps = calibration_number(m, "python_frame_gaps", d.python_frame_gaps, path);
  c.model.xla_python_frame_gaps =
      calibration_number(m, "xla_python_frame_gaps", d.xla_python_frame_gaps, path);
  c.model.memory_event_gaps = calibration_number(m, "memory_event_gaps", d.memory_event_gaps, path);
  c.model.fallback_op_gap_us =
      calibration_number(m, "fallback_op_gap_us", d.fallback_op_gap_us, path);
  if (auto h = j.find("host"); h != j.end() && h->is_object()) {
    c.host.hostname = h->value("hostname", "");
    c.host.cpu_model = h->value("cpu_model", "");
    c.host.torch = h->value("torch", "");
  }
  c.date = j.value("date", "");
  c.model.source = fmt::format("this host's ({}, {})", path, c.date.empty() ? "undated" : c.date);
  return c;
}

void force_calibration(const std::string& path) {
  std::optional<ProfilerCostModel> model;
  if (!path.empty()) {
    model = read_calibration(path).model;
    model->source = fmt::format("forced ({})", path);
  }
  std::lock_guard lock(calibration_mutex());
  forced_model() = std::move(model);
}

ProfilerCostModel profiler_cost_model_for(const Trace& trace) {
  std::lock_guard lock(calibration_mutex());
  if (forced_model()) return *forced_model();
  // JARVIS_CALIBRATION=FILE forces one for every command and the server; a
  // file that cannot be read is an error of each estimate, not a silent
  // fallback to the built-in model.
  if (const char* file = std::getenv("JARVIS_CALIBRATION"); file && *file) {
    auto& cached = models_by_host()[std::string("\n") + file];
    if (cached.source == "built-in") {
      cached = read_calibration(file).model;
      cached.source = fmt::format("forced ({}, JARVIS_CALIBRATION)", file);
    }
    return cached;
  }
  const auto host = trace_host(trace);
  if (!host) return {};
  const std::string key = host_cache_key(*host);
  if (auto it = models_by_host().find(key); it != models_by_host().end()) return it->second;
  // The newest stored calibration of this host; a file that is not one is
  // passed over (it is reported when named by --calibration).
  ProfilerCostModel chosen;
  std::string newest;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(calibration_dir(), ec)) {
    if (entry.path().extension() != ".json") continue;
    try {
      StoredCalibration c = read_calibration(entry.path().string());
      if (!(c.host == *host) || c.date < newest) continue;
      newest = c.date;
      chosen = c.model;
    } catch (const CalibrationError&) {
    }
  }
  models_by_host()[key] = chosen;
  return chosen;
}

}  // namespace jarvis::critical_path
