// The manifest of an analysed sweep (sweep.h, kSweepManifest): what a later
// session needs to rebuild the Sweep from the per-run cache entries alone.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sweep/sweep.h"

namespace jarvis::sweep {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int kManifestVersion = 1;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw SweepError(fmt::format("cannot read {}", p.string()));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Run run_from(const json& r, const fs::path& cache_dir) {
  Run run;
  run.input.path = r.at("path").get<std::string>();
  run.input.relative = r.at("relative").get<std::string>();
  run.input.kind = static_cast<RunKind>(r.at("kind").get<int>());
  run.input.values = r.at("values").get<std::vector<std::string>>();
  fs::path entry = cache_dir / r.at("cache").get<std::string>();
  try {
    run.data = run_data_from_json(read_text(entry));
  } catch (const std::exception& e) {
    throw SweepError(
        fmt::format("run {}: cache entry {}: {}", run.input.relative, entry.string(), e.what()));
  }
  run.from_cache = true;
  return run;
}

}  // namespace

std::string sweep_manifest_json(const Sweep& sweep) {
  json runs = json::array();
  for (const auto& r : sweep.runs)
    runs.push_back({{"path", r.input.path},
                    {"relative", r.input.relative},
                    {"kind", static_cast<int>(r.input.kind)},
                    {"values", r.input.values},
                    {"cache", cache_file_name(r.input.path)}});
  json failures = json::array();
  for (const auto& f : sweep.failures) failures.push_back({f.path, f.reason});
  json j = {{"version", kManifestVersion},    {"root", sweep.root},
            {"layout", sweep.layout.pattern}, {"cache_dir", sweep.cache_dir},
            {"runs", std::move(runs)},        {"failures", std::move(failures)}};
  return j.dump(1);
}

bool is_analysed_sweep_dir(const std::string& dir) {
  std::error_code ec;
  fs::path manifest = fs::path(dir) / kSweepManifest;
  if (!fs::is_regular_file(manifest, ec)) return false;
  // OUT inside (or equal to) the sweep root: the root itself is the sweep to
  // discover, or new runs would never be seen.
  try {
    json j = json::parse(read_text(manifest));
    return fs::weakly_canonical(j.at("root").get<std::string>()) != fs::weakly_canonical(dir);
  } catch (const std::exception&) {
    return true;  // load_analysed_sweep says what is wrong with it
  }
}

Sweep load_analysed_sweep(const std::string& dir, const std::string& cache_dir) {
  fs::path manifest = fs::path(dir) / kSweepManifest;
  json j;
  try {
    j = json::parse(read_text(manifest));
    if (j.value("version", 0) != kManifestVersion) throw SweepError("another version");
  } catch (const std::exception& e) {
    throw SweepError(fmt::format("{}: not a sweep manifest ({})", manifest.string(), e.what()));
  }
  Sweep sweep;
  sweep.root = j.at("root").get<std::string>();
  sweep.layout = parse_layout(j.at("layout").get<std::string>());
  sweep.cache_dir =
      cache_dir.empty() || cache_dir == "none" ? j.at("cache_dir").get<std::string>() : cache_dir;
  for (const auto& r : j.at("runs")) sweep.runs.push_back(run_from(r, sweep.cache_dir));
  for (const auto& f : j.at("failures"))
    sweep.failures.push_back({f.at(0).get<std::string>(), f.at(1).get<std::string>()});
  if (sweep.runs.empty()) throw SweepError(fmt::format("{} lists no run", manifest.string()));
  sweep.cache_hits = sweep.runs.size();
  sweep.int_fields = integer_fields(sweep);
  return sweep;
}

}  // namespace jarvis::sweep
