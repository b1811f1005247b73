// The per-run cache: RunData as versioned JSON, one file per run, named by a
// hash of the run's identity (canonical path, size, mtime) so that a changed
// or moved file misses and an unchanged one is read back without parsing the
// trace. NaN is stored as null (JSON has no NaN).
#include <cmath>
#include <filesystem>
#include <functional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sweep/sweep.h"

namespace jarvis::sweep {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Bump when RunData or its meaning changes: old cache files then miss.
constexpr int kCacheVersion = 8;  // 6: step_ms, kernel_time_us; 7: kernel_step_us; 8: work_*

json num(double v) {
  return std::isnan(v) ? json(nullptr) : json(v);
}
double num(const json& j) {
  return j.is_number() ? j.get<double>() : NAN;
}

// Instances are stored as arrays [uid, start, end, time, overlap, hits,
// kernel?]; the kernel name only when it differs from the row's (it rarely
// does, and names are long): the cache stays small and quick to parse.
json instance_json(const GemmInstance& i, const std::string& row_kernel) {
  json hits = json::array();
  for (const auto& h : i.collectives) hits.push_back({h.collective, h.overlap_us});
  json a = {i.op_uid,          num(i.start_us), num(i.end_us), num(i.kernel_time_us),
            num(i.overlap_us), std::move(hits)};
  if (i.kernel_name != row_kernel) a.push_back(i.kernel_name);
  return a;
}

GemmInstance instance_from(const json& a, const std::string& row_kernel) {
  GemmInstance i;
  i.op_uid = a.at(0).get<int64_t>();
  i.start_us = num(a.at(1));
  i.end_us = num(a.at(2));
  i.kernel_time_us = num(a.at(3));
  i.overlap_us = num(a.at(4));
  for (const auto& h : a.at(5)) i.collectives.push_back({h[0].get<std::string>(), num(h[1])});
  i.kernel_name = a.size() > 6 ? a.at(6).get<std::string>() : row_kernel;
  return i;
}

json gemm_json(const GemmRow& g) {
  json inst = json::array();
  for (const auto& i : g.instances) inst.push_back(instance_json(i, g.kernel_name));
  return {{"op", g.op},
          {"shape", g.shape},
          {"kernel", g.kernel_name},
          {"count", g.count},
          {"min", num(g.min_us)},
          {"max", num(g.max_us)},
          {"mean", num(g.mean_us)},
          {"std", num(g.std_us)},
          {"sum", num(g.sum_us)},
          {"instances", std::move(inst)}};
}

GemmRow gemm_from(const json& j) {
  GemmRow g;
  g.op = j.at("op").get<std::string>();
  g.shape = j.at("shape").get<std::string>();
  g.kernel_name = j.at("kernel").get<std::string>();
  g.count = j.at("count").get<int64_t>();
  g.min_us = num(j.at("min"));
  g.max_us = num(j.at("max"));
  g.mean_us = num(j.at("mean"));
  g.std_us = num(j.at("std"));
  g.sum_us = num(j.at("sum"));
  for (const auto& i : j.at("instances")) g.instances.push_back(instance_from(i, g.kernel_name));
  return g;
}

json record_json(const CollectiveRecord& r) {
  return {{"pg", r.process_group},   {"coll", r.collective},   {"dtype", r.dtype},
          {"kernel", r.kernel_name}, {"ranks", r.group_ranks}, {"nelems", r.in_msg_nelems},
          {"gsize", r.group_size},   {"seq", r.seq},           {"mb", num(r.msg_size_mb)},
          {"ts", num(r.ts)},         {"dur", num(r.dur)},      {"algbw", num(r.algbw)},
          {"busbw", num(r.busbw)}};
}

CollectiveRecord record_from(const json& j) {
  CollectiveRecord r;
  r.process_group = j.at("pg").get<std::string>();
  r.collective = j.at("coll").get<std::string>();
  r.dtype = j.at("dtype").get<std::string>();
  r.kernel_name = j.at("kernel").get<std::string>();
  r.group_ranks = j.at("ranks").get<std::vector<int64_t>>();
  r.in_msg_nelems = j.at("nelems").get<int64_t>();
  r.group_size = j.at("gsize").get<int64_t>();
  r.seq = j.at("seq").get<int64_t>();
  r.msg_size_mb = num(j.at("mb"));
  r.ts = num(j.at("ts"));
  r.dur = num(j.at("dur"));
  r.algbw = num(j.at("algbw"));
  r.busbw = num(j.at("busbw"));
  return r;
}

json group_json(const CollectiveGroup& g) {
  return {{"pg", g.process_group}, {"coll", g.collective},     {"dtype", g.dtype},
          {"gsize", g.group_size}, {"mb", num(g.msg_size_mb)}, {"count", g.count},
          {"sum", num(g.dur_sum)}, {"min", num(g.dur_min)},    {"max", num(g.dur_max)}};
}

CollectiveGroup group_from(const json& j) {
  CollectiveGroup g;
  g.process_group = j.at("pg").get<std::string>();
  g.collective = j.at("coll").get<std::string>();
  g.dtype = j.at("dtype").get<std::string>();
  g.group_size = j.at("gsize").get<int64_t>();
  g.msg_size_mb = num(j.at("mb"));
  g.count = j.at("count").get<int64_t>();
  g.dur_sum = num(j.at("sum"));
  g.dur_min = num(j.at("min"));
  g.dur_max = num(j.at("max"));
  return g;
}

}  // namespace

std::string run_data_to_json(const RunData& d) {
  json j = {{"version", kCacheVersion},
            {"kind", static_cast<int>(d.kind)},
            {"rank", d.rank},
            {"first_gpu_ts", num(d.first_gpu_ts)},
            {"kernel_names", d.kernel_names},
            {"step_ms", d.step_ms},
            {"step_source", d.step_source},
            {"kernel_time_us", d.kernel_time_us},
            {"kernel_step_us", d.kernel_step_us},
            {"health", {{"confidence", d.health_confidence}, {"warnings", d.health_warnings}}},
            {"work", {num(d.work_samples), num(d.work_tokens), d.work_shape}}};
  json& tl = j["timeline"] = json::array();
  for (const auto& r : d.timeline) tl.push_back({r.type, num(r.time_ms), num(r.percent)});
  json& gemms = j["gemms"] = json::array();
  for (const auto& g : d.gemms) gemms.push_back(gemm_json(g));
  json& recs = j["collectives"] = json::array();
  for (const auto& r : d.collectives) recs.push_back(record_json(r));
  json& groups = j["collective_groups"] = json::array();
  for (const auto& g : d.collective_groups) groups.push_back(group_json(g));
  return j.dump();
}

RunData run_data_from_json(const std::string& text) {
  json j = json::parse(text);
  if (j.value("version", 0) != kCacheVersion) throw SweepError("cache file of another version");
  RunData d;
  d.kind = static_cast<RunKind>(j.at("kind").get<int>());
  d.rank = j.at("rank").get<int64_t>();
  d.first_gpu_ts = num(j.at("first_gpu_ts"));
  d.kernel_names = j.at("kernel_names").get<std::vector<std::string>>();
  d.step_ms = j.at("step_ms").get<std::vector<double>>();
  d.step_source = j.at("step_source").get<std::string>();
  d.kernel_time_us = j.at("kernel_time_us").get<std::vector<std::pair<std::string, double>>>();
  d.kernel_step_us =
      j.at("kernel_step_us").get<std::vector<std::pair<std::string, std::vector<double>>>>();
  d.health_confidence = j.at("health").at("confidence").get<std::string>();
  d.health_warnings = j.at("health").at("warnings").get<std::vector<std::string>>();
  const json& work = j.at("work");
  d.work_samples = num(work.at(0));
  d.work_tokens = num(work.at(1));
  d.work_shape = work.at(2).get<std::string>();
  for (const auto& r : j.at("timeline"))
    d.timeline.push_back({r[0].get<std::string>(), num(r[1]), num(r[2])});
  for (const auto& g : j.at("gemms")) d.gemms.push_back(gemm_from(g));
  for (const auto& r : j.at("collectives")) d.collectives.push_back(record_from(r));
  for (const auto& g : j.at("collective_groups")) d.collective_groups.push_back(group_from(g));
  return d;
}

// Identity of a trace file, or of a report directory's files (a report
// directory changes when any sheet does).
std::string cache_file_name(const std::string& path) {
  fs::path p = fs::weakly_canonical(path);
  std::string identity = p.string();
  auto add_file = [&identity](const fs::path& f) {
    std::error_code ec;
    auto size = fs::file_size(f, ec);
    auto mtime = fs::last_write_time(f, ec).time_since_epoch().count();
    identity += fmt::format("|{}|{}|{}", f.filename().string(), ec ? 0 : size, mtime);
  };
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(p, ec))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) add_file(f);
  } else {
    add_file(p);
  }
  // Two independent hashes make an accidental collision negligible.
  size_t h1 = std::hash<std::string>{}(identity);
  size_t h2 = std::hash<std::string>{}(identity + "#salt");
  return fmt::format("run-v{}-{:016x}{:016x}.json", kCacheVersion, h1, h2);
}

}  // namespace jarvis::sweep
