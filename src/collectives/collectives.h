// The collective-communication layer: per-instance bandwidths, per-kernel
// comm/compute overlap, a single-trace summary, and the multi-rank report
// (instances matched across ranks by process group and sequence).
//
// Built on the collective kernels of report/coll_analysis.h. Time base
// alignment across ranks is documented in docs/collectives.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "report/coll_analysis.h"
#include "report/gpu_timeline.h"
#include "report/table.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis::collectives {

// A fault in the input of the multi-rank report (missing instance, mismatched
// world sizes, no collectives, ...); what() says which rank and collective.
class CollectiveError : public ErrorOf<ErrorKind::InvalidInput> {
 public:
  using ErrorOf::ErrorOf;
};

// ---- bandwidth -------------------------------------------------------------

enum class CollectiveType {
  AllReduce,
  ReduceScatter,
  AllGather,
  AllToAll,
  AllToAllV,
  Broadcast,
  Reduce,
  SendRecv,
  Other
};

// Normalises PyTorch's collective names (allreduce, _reduce_scatter_base,
// all_gather_into_tensor_coalesced, all_to_all, broadcast, ...) and XLA's
// collective_permute (SendRecv: point to point).
CollectiveType collective_type(std::string_view collective_name);
const char* collective_type_name(CollectiveType type);

// nccl-tests bus-bandwidth factor for a group of n ranks: allreduce 2(n-1)/n,
// reduce_scatter / allgather / alltoall(v) (n-1)/n, broadcast / reduce /
// sendrecv 1;
// NaN for other collectives or n < 1.
double bus_bandwidth_factor(CollectiveType type, int64_t group_size);

struct Bandwidth {
  double algbw_gbps = 0;  // message size / time, in GiB/s as TraceLens writes "GB/s"
  double busbw_gbps = 0;  // algbw x bus factor
};

// msg_size_mb in MiB, time_us in microseconds; NaN members when time_us <= 0
// or the size or factor is unknown.
Bandwidth bandwidth(CollectiveType type, double msg_size_mb, int64_t group_size, double time_us);

// The message size bandwidth divides (TraceLens "Full msg size"): the output
// for allgather, the input otherwise (MiB, NaN when unknown).
double full_msg_size_mb(const CollectiveKernel& kernel, CollectiveType type);

// ---- instances on one rank ----------------------------------------------------

struct CollectiveInstance {
  CollectiveKernel kernel;
  std::string kernel_name;
  std::string process_group;  // "Process Group Name" text (Unknown_Group / all when absent)
  std::string collective;     // "Collective name" text ("" when absent)
  CollectiveType type = CollectiveType::Other;
  std::string dtype;                 // "" when absent
  int64_t in_msg_nelems = -1;        // -1 when absent
  int64_t group_size = 0;            // 0 when absent
  std::vector<int64_t> group_ranks;  // parsed "Process Group Ranks" (empty when absent)
  int64_t seq = 0;                   // 0-based order by start time within the process group
  double msg_size_mb = 0;            // full_msg_size_mb
  Bandwidth bw;                      // from this kernel's own duration
};

// Every collective kernel with its sequence number, in start-time order.
std::vector<CollectiveInstance> collective_instances(const Trace& trace);

// ---- comm/compute overlap -----------------------------------------------------

// A GPU kernel interval for the overlap computation.
struct TimelineKernel {
  Uid uid = kNoUid;
  double ts = 0;
  double dur = 0;
  int64_t stream = kNoInt;
  int64_t device = kNoInt;  // kernels overlap only on the same device
  bool is_collective = false;
};

struct KernelOverlap {
  Uid uid = kNoUid;  // the compute kernel
  double dur_us = 0;
  double overlapped_us = 0;      // time under at least one collective on another stream
  std::vector<Uid> collectives;  // overlapping collective kernels, by start time
};

// For every non-collective kernel of `kernels` (input order kept): the time
// it ran while a collective kernel of the same device ran on another stream.
std::vector<KernelOverlap> compute_overlap(const std::vector<TimelineKernel>& kernels);

// The kernels of a trace (cat kernel with ts and dur), collective ones marked.
std::vector<TimelineKernel> timeline_kernels(const Trace& trace);

// compute_overlap over timeline_kernels(trace).
std::vector<KernelOverlap> kernel_overlap(const Trace& trace);

// Distinct names of the collective kernels in `overlap.collectives`.
std::vector<std::string> overlapping_collective_names(const Trace& trace,
                                                      const KernelOverlap& overlap);

// Per launching op (and its category): kernel time, overlapped time and share.
// Columns: op category, name, kernel_count, kernel_time_us, overlapped_us,
// overlapped_percent, collectives (names joined by "; "). Sorted by
// overlapped time. Kernels without a launcher count under "<no launcher>".
Table overlap_by_op_table(const Trace& trace, const CallTree& tree,
                          const std::vector<KernelOverlap>& overlaps);
// Columns: op category, kernel_count, kernel_time_us, overlapped_us, overlapped_percent.
Table overlap_by_category_table(const Trace& trace, const CallTree& tree,
                                const std::vector<KernelOverlap>& overlaps);

// ---- single-trace summary (MCP tool results) -------------------------------

struct TopCollective {
  std::string collective;
  std::string dtype;
  double msg_size_mb = 0;
  size_t count = 0;
  double total_us = 0;
  double mean_busbw_gbps = 0;  // mean over instances of the per-kernel bus bandwidth
};

struct TraceCollectiveSummary {
  size_t count = 0;                // collective kernels
  double total_us = 0;             // busy time of the collective kernels (union)
  double exposed_us = 0;           // part not hidden under computation (gpu_timeline)
  std::vector<TopCollective> top;  // by total time, at most `top_n`
};

// `timeline`: compute_gpu_timeline(trace, tree) when the caller has it (null:
// computed here when the trace has collectives).
TraceCollectiveSummary summarize_trace(const Trace& trace, const CallTree& tree, size_t top_n = 5,
                                       const GpuTimeline* timeline = nullptr);

// ---- several ranks ----------------------------------------------------------------

struct RankTrace {
  int64_t rank = -1;
  int64_t world_size = -1;  // distributedInfo.world_size, -1 when absent
  std::string path;
  std::vector<CollectiveInstance> instances;
};

// The rank's instances and identity; `rank_from_order` is used when the trace
// has no distributedInfo.rank. Throws CollectiveError when the trace has no
// collective kernel.
RankTrace rank_trace(const Trace& trace, int64_t rank_from_order);

enum class TimeAlignment {
  CollectiveEnd,  // shift each rank so that synchronising collectives end together
  None,           // trust the timestamps (one host, one clock)
};

struct MatchedInstance {
  std::string process_group;
  std::string collective;
  CollectiveType type = CollectiveType::Other;
  int64_t seq = 0;
  std::string dtype;
  int64_t in_msg_nelems = -1;
  double msg_size_mb = 0;
  int64_t group_size = 0;
  std::vector<int64_t> ranks;    // ascending
  std::vector<double> start_us;  // aligned, per rank in `ranks` order
  std::vector<double> dur_us;
  std::vector<double> wait_us;  // latest start minus this rank's start
  double start_skew_us = 0;
  double end_skew_us = 0;
  int64_t last_rank = -1;   // started last (lowest rank on ties)
  int64_t first_rank = -1;  // started first
  double dur_us_min = 0;
  double dur_us_max = 0;
  Bandwidth bw;  // from dur_us_min: the time the data actually moved
};

struct MultiRankReport {
  std::vector<int64_t> ranks;                 // ascending
  std::map<int64_t, double> clock_offset_us;  // added to each rank's timestamps
  std::vector<MatchedInstance> instances;     // by process group, then seq
};

// Matches the ranks' instances by (process group, seq) and computes skews,
// waits and bandwidths. Throws CollectiveError on duplicate ranks, mismatched
// world sizes, a process group rank without a trace, a rank missing an
// instance (naming rank and collective) or disagreeing collectives.
MultiRankReport match_ranks(std::vector<RankTrace> ranks,
                            TimeAlignment alignment = TimeAlignment::CollectiveEnd);

// Which rank holds the others up: the rank that started last most often. It
// is named a straggler when it was last at half the instances or more and at
// 1.5x an even share (1/ranks) or more; else the last arrival is spread.
struct StragglerVerdict {
  int64_t rank = -1;      // last most often (lowest on ties); -1: no instance
  size_t last_count = 0;  // instances where `rank` started last
  size_t instances = 0;
  bool straggler = false;
  double total_wait_us = 0;  // every rank's wait for the last arrival, summed
  std::string text;          // the verdict in one line
};
StragglerVerdict straggler_verdict(const MultiRankReport& report);

// DIR/collective_instances.csv, collective_summary.csv and collective_ranks.csv.
Table collective_instances_table(const MultiRankReport& report);
Table collective_summary_table(const MultiRankReport& report);
Table collective_ranks_table(const MultiRankReport& report);

}  // namespace jarvis::collectives

namespace jarvis::collectives {

// ---- files ---------------------------------------------------------------------------

struct CollectiveReportOptions {
  TimeAlignment alignment = TimeAlignment::CollectiveEnd;
  bool overlap = false;  // also the per-rank comm/compute overlap tables
  // Called after each trace is loaded (done, total); return false to stop
  // (CollectiveError "cancelled").
  std::function<bool(size_t, size_t)> progress;
};

struct CollectiveReportResult {
  MultiRankReport report;
  std::vector<Table> tables;  // instances, summary, ranks, then overlap tables if asked
  bool single_rank = false;   // one trace: rank_collectives + overlap tables only
};

// One row per collective kernel of one rank: process_group, collective, seq,
// dtype, in_msg_nelems, msg_size_mb, group_size, stream, ts, dur_us,
// algbw_gbps, busbw_gbps (from the kernel's own duration), kernel.
Table rank_collectives_table(const std::vector<CollectiveInstance>& instances);

// Loads one trace per rank (rank from distributedInfo, else the position in
// `paths`) and builds the report tables. Load failures propagate as TraceError.
// The same as analyse_rank over `paths` then merge_ranks.
CollectiveReportResult collective_report(const std::vector<std::string>& paths,
                                         const CollectiveReportOptions& options = {});

// ---- the two stages of collective_report -----------------------------------------
// The per-rank stage (parse a trace, extract its instances and overlap
// tables) is the expensive part and independent per rank, so an MPI job runs
// it on many ranks and ships each result to rank 0 (src/scaleout), which
// runs the merge stage exactly as one process does.

// What the merge stage needs of one rank: its identity and instances, and its
// overlap tables (rank<R>_collective_overlap_by_op / _by_category) if asked.
struct RankAnalysis {
  RankTrace trace;
  std::vector<Table> overlap_tables;
};

// Whether the traces of a report over `count` ranks need their overlap
// tables: with --overlap, or always for a single trace.
bool wants_overlap(const CollectiveReportOptions& options, size_t count);

// Loads `path` and extracts the rank's analysis; only it is kept, so the trace
// is freed on return. Throws as load_trace and rank_trace do.
RankAnalysis analyse_rank(const std::string& path, int64_t rank_from_order, bool with_overlap);

// Matches and aligns the ranks (in `paths` order) and builds the tables.
CollectiveReportResult merge_ranks(std::vector<RankAnalysis> ranks, TimeAlignment alignment);

// A compact, exact text form of a RankAnalysis (the MPI message): instances
// as arrays of the fields the merge reads, doubles in shortest round-trip
// form (non-finite ones as strings), table cells tagged with their type.
std::string rank_analysis_to_text(const RankAnalysis& analysis);
// Throws std::runtime_error on malformed text.
RankAnalysis rank_analysis_from_text(std::string_view text);

// Writes DIR/<table>.csv for every table; each file atomically, all rendered
// before the first is written.
std::vector<std::string> write_collective_tables(const std::vector<Table>& tables,
                                                 const std::string& dir);

}  // namespace jarvis::collectives
