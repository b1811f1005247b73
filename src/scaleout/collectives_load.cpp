// collective_report across the ranks: every rank trace is a task (parse it,
// extract its instances and overlap tables), rank 0 reads the results back
// in `paths` order and runs the same merge as one process.
#include <filesystem>
#include <stdexcept>
#include <string>

#include "scaleout/job.h"
#include "scaleout/tasks.h"

namespace jarvis::scaleout {
namespace {

namespace fs = std::filesystem;

double file_size(const std::string& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  return ec ? 0.0 : static_cast<double>(size);
}

// The analysis in a task result, or the error one process would have thrown.
collectives::RankAnalysis analysis_from(const std::string& path, const std::string& result) {
  auto f = detail::unpack(result);
  if (f.size() == 2 && f[0] == "rank") return collectives::rank_analysis_from_text(f[1]);
  if (f.size() != 3 || f[0] != "error") throw std::runtime_error("malformed result for " + path);
  if (f[2] == "trace") throw TraceError(f[1]);
  if (f[2] == "collective") throw collectives::CollectiveError(f[1]);
  throw std::runtime_error(f[1]);
}

}  // namespace

collectives::CollectiveReportResult Job::collective_report(
    const std::vector<std::string>& paths, const collectives::CollectiveReportOptions& options) {
  if (paths.empty()) throw collectives::CollectiveError("no rank traces given");
  const bool overlap = collectives::wants_overlap(options, paths.size());
  std::vector<Task> tasks;
  for (size_t k = 0; k < paths.size(); ++k)
    tasks.push_back({detail::kCollectivesRankTask,
                     detail::pack({paths[k], std::to_string(k), overlap ? "1" : "0"}), paths[k],
                     file_size(paths[k])});
  // Cancelling is not offered here: every task is already out.
  auto results = run_tasks(tasks, [&](size_t done, size_t total) {
    if (options.progress) options.progress(done, total);
  });
  // Read back in `paths` order: the first failing trace is the one a single
  // process would have stopped at.
  std::vector<collectives::RankAnalysis> ranks;
  ranks.reserve(paths.size());
  for (size_t k = 0; k < paths.size(); ++k) ranks.push_back(analysis_from(paths[k], results[k]));
  return collectives::merge_ranks(std::move(ranks), options.alignment);
}

}  // namespace jarvis::scaleout
