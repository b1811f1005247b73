// The regression gate of gate.h: metrics per run, one rank test per metric,
// and named baselines in the cache.
#include "sweep/gate.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/output_guard.h"
#include "pycompat/numeric.h"
#include "sweep/number_cell.h"

namespace jarvis::sweep {
namespace {

namespace fs = std::filesystem;

int level_order(const std::string& level) {
  if (level == "step") return 0;
  if (level == "category") return 1;
  if (level == "op") return 2;
  return 3;
}

fs::path baseline_dir(const std::string& dir) {
  if (!dir.empty()) return dir;
  std::string base = jarvis_cache_dir();
  if (base.empty())
    throw SweepError(
        "no cache directory for named baselines: set JARVIS_CACHE_DIR or give a "
        "baseline directory");
  return fs::path(base) / "gate_baselines";
}

fs::path baseline_file(const std::string& name, const std::string& dir) {
  static const std::regex ok("[A-Za-z0-9._-]{1,100}");
  if (!std::regex_match(name, ok) || name == "." || name == "..")
    throw SweepError(
        fmt::format("baseline name '{}': use letters, digits, '.', '_' and '-'", name));
  return baseline_dir(dir) / (name + ".json");
}

}  // namespace

RunMetrics run_metrics(const RunData& run) {
  RunMetrics m;
  if (!run.step_ms.empty()) m["step/step_time_ms"] = pycompat::pandas_groupby_mean(run.step_ms);
  for (const auto& r : run.timeline)
    if (!std::isnan(r.time_ms)) m["category/" + r.type] = r.time_ms;
  for (const auto& g : run.gemms)
    if (!std::isnan(g.sum_us)) m["op/" + g.op + " " + g.shape] += g.sum_us;
  for (const auto& [name, us] : run.kernel_time_us) m["kernel/" + name] = us;
  return m;
}

GateSide gate_side(const std::vector<std::string>& paths, const LoadOptions& options) {
  GateSide side;
  for (const std::string& p : paths) {
    std::error_code ec;
    Sweep s;
    if (fs::is_directory(p, ec) && !fs::exists(fs::path(p) / "gpu_timeline.csv", ec) &&
        !fs::exists(fs::path(p) / "GEMM.csv", ec)) {
      s = load_sweep(p, options);
    } else {
      // One run: the file (or report directory) as the only match of a
      // literal layout under its parent, so it goes through the run cache.
      fs::path abs = fs::absolute(p);
      LoadOptions one = options;
      one.pattern = abs.filename().string();
      for (char c : std::string("{}*?")) {
        if (one.pattern.find(c) != std::string::npos)
          throw SweepError(
              fmt::format("'{}': a run's file name with '{{', '}}', '*' or '?' "
                          "cannot be given to the gate; give its directory",
                          p));
      }
      s = load_sweep(abs.parent_path().string(), one);
    }
    for (const auto& f : s.failures) throw SweepError(fmt::format("'{}': {}", f.path, f.reason));
    for (const Run& r : s.runs) {
      side.runs.push_back(r.input.path);
      side.metrics.push_back(run_metrics(r.data));
    }
  }
  if (side.runs.empty()) throw SweepError("no run to gate");
  return side;
}

GateResult gate(const GateSide& base, const GateSide& cand, const GateOptions& options) {
  GateResult res;
  res.base_runs = base.metrics.size();
  res.cand_runs = cand.metrics.size();
  // The baseline's median busy time decides which ops and kernels are judged.
  std::vector<double> busy;
  for (const auto& m : base.metrics)
    if (auto it = m.find("category/busy_time"); it != m.end()) busy.push_back(it->second);
  std::sort(busy.begin(), busy.end());
  double busy_us = busy.empty() ? NAN : busy[busy.size() / 2] * 1e3;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> samples;
  for (const auto& m : base.metrics)
    for (const auto& [k, v] : m) samples[k].first.push_back(v);
  for (const auto& m : cand.metrics)
    for (const auto& [k, v] : m) samples[k].second.push_back(v);
  for (const auto& [key, ab] : samples) {
    const auto& [a, b] = ab;
    std::string level = key.substr(0, key.find('/')), name = key.substr(key.find('/') + 1);
    bool fine_grained = level == "op" || level == "kernel";
    // A metric every run of both sides has; a kernel absent from some runs
    // is a different program, not a timing sample.
    if (a.size() != base.metrics.size() || b.size() != cand.metrics.size()) {
      res.not_judged++;
      continue;
    }
    if (fine_grained && !std::isnan(busy_us)) {
      std::vector<double> sa = a;
      std::sort(sa.begin(), sa.end());
      if (sa[sa.size() / 2] < busy_us * options.min_share_pct / 100) {
        res.not_judged++;
        continue;
      }
    }
    GateRow row{level, name, level == "step" || level == "category" ? "ms" : "us",
                compare_samples(a, b, options.alpha, options.threshold_pct)};
    if (row.cmp.verdict == Verdict::Slower) res.regression = true;
    res.rows.push_back(std::move(row));
  }
  std::stable_sort(res.rows.begin(), res.rows.end(), [](const GateRow& x, const GateRow& y) {
    int lx = level_order(x.level) >= 2 ? 2 : level_order(x.level);
    int ly = level_order(y.level) >= 2 ? 2 : level_order(y.level);
    if (lx != ly) return lx < ly;
    return lx == 2 && std::fabs(x.cmp.change_pct) > std::fabs(y.cmp.change_pct);
  });
  return res;
}

Table gate_table(const GateResult& result) {
  Table t("gate", {"level", "name", "unit", "base_runs", "cand_runs", "base_median", "cand_median",
                   "change_percent", "ci_low_percent", "ci_high_percent", "p_value",
                   "min_possible_p", "verdict", "reason"});
  for (const GateRow& r : result.rows) {
    const SampleComparison& c = r.cmp;
    t.rows.push_back({Cell(r.level), Cell(r.name), Cell(r.unit), Cell(c.n_base), Cell(c.n_cand),
                      number_cell(c.base_median), number_cell(c.cand_median),
                      number_cell(c.change_pct), number_cell(c.ci_pct.lo), number_cell(c.ci_pct.hi),
                      number_cell(c.test.p), number_cell(c.test.min_p),
                      Cell(std::string(verdict_name(c.verdict))), Cell(c.reason)});
  }
  return t;
}

std::string gate_summary(const GateResult& result, const GateOptions& options) {
  std::map<std::string, size_t> counts;
  for (const auto& r : result.rows) counts[verdict_name(r.cmp.verdict)]++;
  std::string text = fmt::format(
      "gate: {} ({} baseline run(s), {} candidate run(s); slower = p < {} and median change > "
      "{} %)\n",
      result.regression ? "REGRESSION" : "pass", result.base_runs, result.cand_runs, options.alpha,
      options.threshold_pct);
  std::string parts;
  for (const auto& [v, n] : counts)
    parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", n, v);
  text += fmt::format(
      "{} metrics judged: {}; {} not judged (under {} % of busy time or missing "
      "from some runs)\n",
      result.rows.size(), parts, result.not_judged, options.min_share_pct);
  size_t shown = 0;
  for (const auto& r : result.rows) {
    bool show = r.level == "step" || (r.cmp.verdict == Verdict::Slower && shown < 6);
    if (!show) continue;
    if (r.level != "step") ++shown;
    text += fmt::format("- {} {}: {} ({})\n", r.level, r.name.substr(0, 80),
                        verdict_name(r.cmp.verdict), r.cmp.reason);
  }
  return text;
}

std::string save_baseline(const std::string& name, const GateSide& side, const std::string& dir) {
  fs::path file = baseline_file(name, dir);
  nlohmann::json j = {{"version", 1}, {"runs", side.runs}, {"metrics", side.metrics}};
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (ec)
    throw SweepError(
        fmt::format("cannot create {}: {}", file.parent_path().string(), ec.message()));
  write_file_atomic(file.string(), j.dump());
  return file.string();
}

namespace {
std::string agent_baseline_dir() {
  return (baseline_dir("") / "agents").string();
}
}  // namespace

std::string save_agent_baseline(const std::string& name, const GateSide& side) {
  return save_baseline(name, side, agent_baseline_dir());
}

GateSide load_agent_baseline(const std::string& name, std::string* from) {
  const std::string own = agent_baseline_dir();
  std::error_code ec;
  const std::string dir = fs::exists(baseline_file(name, own), ec) ? own : "";
  if (from) *from = baseline_file(name, dir).string();
  return load_baseline(name, dir);
}

GateSide load_baseline(const std::string& name, const std::string& dir) {
  fs::path file = baseline_file(name, dir);
  std::ifstream in(file);
  if (!in)
    throw SweepError(fmt::format("no baseline named '{}' ({}); save one with `jarvis gate "
                                 "--save-baseline {} RUNS...`",
                                 name, file.string(), name),
                     ErrorKind::NotFound);
  std::stringstream text;
  text << in.rdbuf();
  try {
    auto j = nlohmann::json::parse(text.str());
    if (j.value("version", 0) != 1) throw SweepError("another version");
    GateSide side;
    side.runs = j.at("runs").get<std::vector<std::string>>();
    side.metrics = j.at("metrics").get<std::vector<RunMetrics>>();
    return side;
  } catch (const std::exception& e) {
    throw SweepError(fmt::format("baseline '{}' ({}) is unreadable: {}; save it again", name,
                                 file.string(), e.what()));
  }
}

}  // namespace jarvis::sweep
