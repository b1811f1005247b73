// load_sweep: discovery, then a pool of `jobs` worker threads taking runs from
// a shared counter. A worker holds one trace at a time and keeps only its
// RunData, so peak memory is `jobs` traces plus the small derived tables.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/cache_prune.h"
#include "base/output_guard.h"
#include "explore/input_format.h"
#include "rocprof/profile.h"
#include "sweep/sweep.h"
#include "trace/snapshot.h"

namespace jarvis::sweep {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The default per-run cache: beside the trace snapshots in the user's cache
// directory, never in the sweep (inputs are often read-only or shared). Its
// files are named by a hash of each run's canonical path, size and mtime, so
// every sweep shares the one directory.
fs::path default_cache_dir() {
  std::string base = jarvis_cache_dir();
  return base.empty() ? fs::path() : fs::path(base) / "sweeps";
}

// The cache directory, created (0700 when it is the default); "" (with a
// warning) when it cannot be used.
std::string prepare_cache_dir(const std::string& wanted, std::string& warning) {
  if (wanted == "none") return "";
  fs::path dir = wanted.empty() ? default_cache_dir() : fs::path(wanted);
  if (dir.empty()) {
    warning =
        "no cache directory (set JARVIS_CACHE_DIR, XDG_CACHE_HOME or HOME, or use --cache "
        "DIR); runs are not cached";
    return "";
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (wanted.empty()) fs::permissions(dir, fs::perms::owner_all, ec);
  // A probe write: root ignores directory permissions only sometimes (e.g. on
  // read-only mounts), so try instead of checking mode bits.
  fs::path probe =
      dir / fmt::format(".probe.{}", std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(probe);
    if (!out) {
      warning =
          fmt::format("cache directory {} is not writable; runs are not cached (use --cache DIR)",
                      dir.string());
      return "";
    }
  }
  fs::remove(probe, ec);
  return dir.string();
}

// Bounds the default cache like the snapshots (JARVIS_CACHE_MAX_MB, default
// 4096 MiB; the two caches count apart): the least recently written entries
// go first, never one of the runs just loaded.
void prune_run_cache(const std::string& dir, const std::vector<RunInput>& kept_runs) {
  std::set<std::string> kept;
  for (const auto& run : kept_runs) kept.insert(cache_file_name(run.path));
  prune_cache_dir(
      dir, snapshot_cache_budget(), [](const fs::path&) { return true; },
      [&kept](const fs::path& p) { return kept.count(p.filename().string()) > 0; });
}

// A trace file may be a rocprofv3 results file (judged by content).
RunData analyse(const RunInput& in) {
  switch (in.kind) {
    case RunKind::ReportDir:
      return read_report_dir(in.path);
    case RunKind::ReportXlsx:
      return read_report_xlsx(in.path);
    case RunKind::Rocprof:
      return read_rocprof(in.path);
    case RunKind::Trace:
      break;
  }
  switch (detect_input_format(in.path)) {
    case InputFormat::RocprofJson:
    case InputFormat::RocprofCsv:
      return read_rocprof(in.path);
    default:
      return analyse_trace(in.path);
  }
}

}  // namespace

std::vector<std::string> Sweep::config_fields() const {
  std::vector<std::string> out;
  for (const auto& f : layout.fields)
    if (f != "rank") out.push_back(f);
  return out;
}

std::string Sweep::config_label(const Run& run) const {
  std::string label;
  for (size_t k = 0; k < layout.fields.size(); ++k) {
    if (layout.fields[k] == "rank") continue;
    if (!label.empty()) label += ' ';
    label += layout.fields[k] + "=" + run.input.values[k];
  }
  return label.empty() ? "all" : label;
}

int64_t Sweep::rank_of(const Run& run) const {
  for (size_t k = 0; k < layout.fields.size(); ++k)
    if (layout.fields[k] == "rank") {
      try {
        return std::stoll(run.input.values[k]);
      } catch (...) {
        break;
      }
    }
  return run.data.rank;
}

RunOutcome analyse_run(const RunInput& in, const std::string& cache_dir) {
  RunOutcome out;
  Run run{in, {}, false};
  fs::path cache_file;
  if (!cache_dir.empty()) {
    cache_file = fs::path(cache_dir) / cache_file_name(in.path);
    std::error_code ec;
    if (fs::is_regular_file(cache_file, ec)) {
      try {
        run.data = run_data_from_json(read_text(cache_file));
        run.from_cache = true;
        out.run = std::move(run);
        return out;
      } catch (const std::exception&) {
        // A corrupt or old cache file is rebuilt below.
      }
    }
  }
  try {
    run.data = analyse(in);
  } catch (const std::exception& e) {
    out.failure = RunFailure{in.path, e.what()};
    return out;
  }
  if (!cache_file.empty()) {
    try {
      write_cache_file_atomic(cache_file.string(), run_data_to_json(run.data));
    } catch (const std::exception&) {
      // Caching is an optimisation; the run itself succeeded.
    }
  }
  out.run = std::move(run);
  return out;
}

SweepPlan plan_sweep(const std::string& root, const LoadOptions& options) {
  Discovery found = discover_runs(root, options.pattern, options.admit);
  if (found.runs.empty())
    throw SweepError(
        fmt::format("no run matches layout '{}' under {}", found.layout.pattern, root));
  SweepPlan plan;
  plan.sweep.root = fs::absolute(root).string();
  plan.sweep.layout = found.layout;
  plan.sweep.failures = found.failures;
  plan.sweep.cache_dir = prepare_cache_dir(options.cache_dir, plan.sweep.cache_warning);
  plan.runs = std::move(found.runs);
  return plan;
}

Sweep finish_sweep(SweepPlan plan, std::vector<RunOutcome> outcomes) {
  Sweep sweep = std::move(plan.sweep);
  const size_t total = plan.runs.size();
  for (size_t k = 0; k < total && k < outcomes.size(); ++k) {
    RunOutcome& o = outcomes[k];
    if (o.failure) sweep.failures.push_back(*o.failure);
    sweep.runs_parsed += o.failure || (o.run && !o.run->from_cache) ? 1 : 0;
    if (!o.run) continue;
    sweep.cache_hits += o.run->from_cache ? 1 : 0;
    sweep.runs.push_back(std::move(*o.run));
  }
  sweep.int_fields = integer_fields(sweep);
  if (sweep.runs.empty())
    throw SweepError(fmt::format("all {} runs under {} failed; first: {}: {}", total, sweep.root,
                                 sweep.failures.front().path, sweep.failures.front().reason));
  return sweep;
}

namespace {

// Analyses the plan's runs in parallel (at most options.jobs at once).
Sweep analyse_plan(SweepPlan plan, const LoadOptions& options) {
  const std::vector<RunInput>& runs = plan.runs;
  const size_t total = runs.size();
  size_t jobs = options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  jobs = std::min(jobs, total);
  std::vector<RunOutcome> outcomes(total);
  std::atomic<size_t> next{0};
  std::atomic<bool> cancelled{false};
  std::mutex progress_mutex;
  size_t done = 0;
  auto loop = [&] {
    for (size_t k; !cancelled && (k = next++) < total;) {
      outcomes[k] = analyse_run(runs[k], plan.sweep.cache_dir);
      std::lock_guard lock(progress_mutex);
      ++done;
      if (options.progress && !options.progress(done, total, runs[k].path)) cancelled = true;
    }
  };
  std::vector<std::thread> pool;
  for (size_t j = 1; j < jobs; ++j) pool.emplace_back(loop);
  loop();
  for (auto& t : pool) t.join();
  if (cancelled) throw SweepError("cancelled", ErrorKind::Cancelled);
  if (options.cache_dir.empty() && !plan.sweep.cache_dir.empty())
    prune_run_cache(plan.sweep.cache_dir, runs);
  return finish_sweep(std::move(plan), std::move(outcomes));
}

}  // namespace

Sweep load_sweep(const std::string& root, const LoadOptions& options) {
  if (is_analysed_sweep_dir(root)) return load_analysed_sweep(root, options.cache_dir);
  return analyse_plan(plan_sweep(root, options), options);
}

Sweep load_sweep_files(const std::vector<std::string>& paths, const LoadOptions& options) {
  if (paths.empty()) throw SweepError("no trace given");
  std::vector<fs::path> files;
  for (const std::string& p : paths) files.push_back(fs::absolute(p).lexically_normal());
  // The files' common directory is the sweep's root.
  fs::path root = files.front().parent_path();
  for (const fs::path& f : files)
    while (!root.empty() && root != root.root_path() &&
           f.lexically_relative(root).native().starts_with(".."))
      root = root.parent_path();
  SweepPlan plan;
  plan.sweep.root = root.string();
  plan.sweep.layout = Layout{};
  plan.sweep.cache_dir = prepare_cache_dir(options.cache_dir, plan.sweep.cache_warning);
  for (const fs::path& f : files) {
    std::string reason = options.admit ? options.admit(f.string()) : "";
    if (!reason.empty()) throw SweepError(f.string() + ": " + reason);
    std::error_code ec;
    if (!fs::is_regular_file(f, ec))
      throw SweepError(f.string() + ": not a trace file (give one trace file per rank)");
    RunInput in;
    in.path = f.string();
    in.relative = f.lexically_relative(root).string();
    in.kind = RunKind::Trace;
    plan.runs.push_back(std::move(in));
  }
  std::vector<RunInput> inputs = plan.runs;
  Sweep sweep = analyse_plan(std::move(plan), options);
  // A trace without distributedInfo.rank is the rank of its position (as
  // `jarvis collectives` numbers it).
  for (Run& run : sweep.runs)
    if (run.data.rank < 0 && run.data.kind == RunKind::Trace)
      for (size_t k = 0; k < inputs.size(); ++k)
        if (inputs[k].path == run.input.path) run.data.rank = static_cast<int64_t>(k);
  return sweep;
}

}  // namespace jarvis::sweep
