// Loading rank traces and writing the multi-rank collective report.
#include <filesystem>

#include <fmt/format.h>

#include "collectives/collectives.h"
#include "trace/loader.h"

namespace jarvis::collectives {

CollectiveReportResult collective_report(const std::vector<std::string>& paths,
                                         const CollectiveReportOptions& options) {
  if (paths.empty()) throw CollectiveError("no rank traces given");
  const bool single = paths.size() == 1;
  std::vector<RankTrace> ranks;
  std::vector<Table> overlap_tables;
  for (size_t k = 0; k < paths.size(); ++k) {
    // Only the instances are kept, so one trace is in memory at a time.
    Trace trace = load_trace(paths[k]);
    ranks.push_back(rank_trace(trace, static_cast<int64_t>(k)));
    if (options.overlap || single) {
      CallTree tree(trace);
      auto overlaps = kernel_overlap(trace);
      for (Table t : {overlap_by_op_table(trace, tree, overlaps),
                      overlap_by_category_table(trace, tree, overlaps)}) {
        t.name = fmt::format("rank{}_{}", ranks.back().rank, t.name);
        overlap_tables.push_back(std::move(t));
      }
    }
    if (options.progress && !options.progress(k + 1, paths.size()))
      throw CollectiveError("cancelled");
  }
  CollectiveReportResult result;
  if (single) {
    result.single_rank = true;
    result.report.ranks = {ranks.front().rank};
    result.tables.push_back(rank_collectives_table(ranks.front().instances));
    for (Table& t : overlap_tables) result.tables.push_back(std::move(t));
    return result;
  }
  result.report = match_ranks(std::move(ranks), options.alignment);
  result.tables = {collective_instances_table(result.report),
                   collective_summary_table(result.report), collective_ranks_table(result.report)};
  for (Table& t : overlap_tables) result.tables.push_back(std::move(t));
  return result;
}

std::vector<std::string> write_collective_tables(const std::vector<Table>& tables,
                                                 const std::string& dir) {
  auto dir_lock = lock_output_dir(dir);
  std::vector<std::pair<std::string, std::string>> files;
  for (const Table& t : tables)
    files.emplace_back((std::filesystem::path(dir) / (t.name + ".csv")).string(), t.to_csv());
  std::vector<std::string> written;
  for (const auto& [path, text] : files) {
    write_file_atomic(path, text);
    written.push_back(path);
  }
  return written;
}

}  // namespace jarvis::collectives
