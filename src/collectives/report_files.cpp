// Loading rank traces and writing the multi-rank collective report.
#include <filesystem>

#include <fmt/format.h>

#include "collectives/collectives.h"
#include "explore/input_format.h"
#include "trace/loader.h"

namespace jarvis::collectives {

bool wants_overlap(const CollectiveReportOptions& options, size_t count) {
  return options.overlap || count == 1;
}

namespace {

RankAnalysis analyse_rank_trace(const Trace& trace, int64_t rank_from_order, bool with_overlap) {
  RankAnalysis a;
  a.trace = rank_trace(trace, rank_from_order);
  if (with_overlap) {
    CallTree tree(trace);
    auto overlaps = kernel_overlap(trace);
    for (Table t : {overlap_by_op_table(trace, tree, overlaps),
                    overlap_by_category_table(trace, tree, overlaps)}) {
      t.name = fmt::format("rank{}_{}", a.trace.rank, t.name);
      a.overlap_tables.push_back(std::move(t));
    }
  }
  return a;
}

}  // namespace

RankAnalysis analyse_rank(const std::string& path, int64_t rank_from_order, bool with_overlap) {
  return analyse_rank_trace(load_any_trace(path), rank_from_order, with_overlap);
}

CollectiveReportResult merge_ranks(std::vector<RankAnalysis> analyses, TimeAlignment alignment) {
  if (analyses.empty()) throw CollectiveError("no rank traces given");
  std::vector<RankTrace> ranks;
  std::vector<Table> overlap_tables;
  for (RankAnalysis& a : analyses) {
    ranks.push_back(std::move(a.trace));
    for (Table& t : a.overlap_tables) overlap_tables.push_back(std::move(t));
  }
  CollectiveReportResult result;
  if (ranks.size() == 1) {
    result.single_rank = true;
    result.report.ranks = {ranks.front().rank};
    result.tables.push_back(rank_collectives_table(ranks.front().instances));
  } else {
    result.report = match_ranks(std::move(ranks), alignment);
    result.tables = {collective_instances_table(result.report),
                     collective_summary_table(result.report),
                     collective_ranks_table(result.report)};
  }
  for (Table& t : overlap_tables) result.tables.push_back(std::move(t));
  return result;
}

CollectiveReportResult collective_report(const std::vector<std::string>& paths,
                                         const CollectiveReportOptions& options) {
  if (paths.empty()) throw CollectiveError("no rank traces given");
  std::vector<RankAnalysis> ranks;
  for (size_t k = 0; k < paths.size(); ++k) {
    // Only the analysis is kept, so one trace (one capture when a
    // multi-process Nsight Systems export holds several ranks) is in memory
    // at a time.
    std::vector<Trace> traces = load_rank_traces(paths[k]);
    const bool overlap = wants_overlap(options, paths.size() * traces.size());
    for (const Trace& t : traces)
      ranks.push_back(analyse_rank_trace(t, static_cast<int64_t>(ranks.size()), overlap));
    if (options.progress && !options.progress(k + 1, paths.size()))
      throw CollectiveError("cancelled");
  }
  return merge_ranks(std::move(ranks), options.alignment);
}

std::vector<std::string> write_collective_tables(const std::vector<Table>& tables,
                                                 const std::string& dir) {
  auto dir_lock = lock_output_dir(dir);
  std::vector<std::pair<std::string, std::string>> files;
  for (const Table& t : tables)
    files.emplace_back((std::filesystem::path(dir) / (t.name + ".csv")).string(), t.to_csv());
  write_files_atomic(files);
  std::vector<std::string> written;
  for (const auto& file : files) written.push_back(file.first);
  return written;
}

}  // namespace jarvis::collectives
