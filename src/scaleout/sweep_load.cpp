// load_sweep across the ranks: rank 0 plans (discovery, cache directory),
// hands every run out as a task, reads each result back as the single-process
// load reads a cache entry, and merges in discovery order (finish_sweep).
#include <filesystem>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "scaleout/job.h"
#include "scaleout/tasks.h"

namespace jarvis::scaleout {
namespace {

namespace fs = std::filesystem;

// Bytes to read: the file, or a report directory's files.
double input_size(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    auto size = fs::file_size(path, ec);
    return ec ? 0.0 : static_cast<double>(size);
  }
  double total = 0;
  for (const auto& e : fs::directory_iterator(path, ec))
    if (e.is_regular_file(ec)) total += static_cast<double>(e.file_size(ec));
  return total;
}

sweep::RunOutcome outcome_from(const sweep::RunInput& input, const std::string& result) {
  auto f = detail::unpack(result);
  if (f.size() != 3) throw std::runtime_error("malformed result for " + input.path);
  sweep::RunOutcome o;
  if (f[0] == "failure") {
    o.failure = sweep::RunFailure{input.path, f[2]};
    return o;
  }
  o.run = sweep::Run{input, sweep::run_data_from_json(f[2]), f[1] == "1"};
  return o;
}

}  // namespace

sweep::Sweep Job::load_sweep(const std::string& root, const sweep::LoadOptions& options) {
  // Already analysed (an OUT directory): nothing to hand out.
  if (sweep::is_analysed_sweep_dir(root))
    return sweep::load_analysed_sweep(root, options.cache_dir);
  sweep::SweepPlan plan = sweep::plan_sweep(root, options);
  std::vector<Task> tasks;
  for (const auto& in : plan.runs)
    tasks.push_back(
        {detail::kSweepRunTask,
         detail::pack({std::to_string(static_cast<int>(in.kind)), plan.sweep.cache_dir, in.path}),
         in.path, input_size(in.path)});
  size_t total = plan.runs.size();
  auto results = run_tasks(tasks, [&](size_t done, size_t) {
    if (options.progress) options.progress(done, total, "");
  });
  std::vector<sweep::RunOutcome> outcomes;
  outcomes.reserve(total);
  for (size_t k = 0; k < total; ++k) outcomes.push_back(outcome_from(plan.runs[k], results[k]));
  return sweep::finish_sweep(std::move(plan), std::move(outcomes));
}

}  // namespace jarvis::scaleout
