// collectives: one row per collective kernel (NCCL / RCCL) with its process
// group, sequence number, message size and bandwidths, from the collectives
// layer (src/collectives). Empty for a trace without collective kernels.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "collectives/collectives.h"
#include "explore/trace_store.h"
#include "sql/table_source.h"

namespace jarvis::sql {
namespace {
// Named: a unity build compiles the tables in one unit, each with its own Col.
namespace collectives_columns {

enum Col {
  kUid,
  kName,
  kRank,
  kWorldSize,
  kProcessGroup,
  kGroupRanks,
  kGroupSize,
  kSeq,
  kCollective,
  kType,
  kDtype,
  kInMsgNelems,
  kMsgMb,
  kBytes,
  kTs,
  kDur,
  kEnd,
  kStream,
  kAlgbw,
  kBusbw
};

struct Instances {
  int64_t rank = -1;
  int64_t world_size = -1;
  std::vector<collectives::CollectiveInstance> rows;  // by uid
  std::vector<Uid> uids;                              // rows' uids, ascending
};

Instances build_instances(const Trace& trace) {
  Instances ix;
  try {
    collectives::RankTrace r = collectives::rank_trace(trace, -1);
    ix.rank = r.rank;
    ix.world_size = r.world_size;
    ix.rows = std::move(r.instances);
  } catch (const collectives::CollectiveError&) {
    return ix;  // no collective kernel: an empty table, not an error
  }
  // By uid, so that `uid = ?` is a lookup (seq keeps the start-time order).
  std::sort(ix.rows.begin(), ix.rows.end(),
            [](const auto& a, const auto& b) { return a.kernel.uid < b.kernel.uid; });
  for (const auto& inst : ix.rows) ix.uids.push_back(inst.kernel.uid);
  return ix;
}

void maybe_text(CellSink& out, const std::string& s) {
  if (s.empty())
    out.null();
  else
    out.text(s, false);
}

void collective_cell(const Trace& trace, const Instances& ix, size_t row, int column,
                     CellSink& out) {
  const collectives::CollectiveInstance& c = ix.rows[row];
  const Event& e = trace.events[c.kernel.uid];
  switch (column) {
    case kUid:
      return out.integer(c.kernel.uid);
    case kName:
      return out.text(trace.str(e.name), true);
    case kRank:
      return ix.rank >= 0 ? out.integer(ix.rank) : out.null();
    case kWorldSize:
      return ix.world_size >= 0 ? out.integer(ix.world_size) : out.null();
    case kProcessGroup:
      return maybe_text(out, c.process_group);
    case kGroupRanks:
      return c.group_ranks.empty()
                 ? out.null()
                 : out.text(fmt::format("[{}]", fmt::join(c.group_ranks, ", ")), false);
    case kGroupSize:
      return c.group_size > 0 ? out.integer(c.group_size) : out.null();
    case kSeq:
      return out.integer(c.seq);
    case kCollective:
      return maybe_text(out, c.collective);
    case kType:
      return out.text(collectives::collective_type_name(c.type), true);
    case kDtype:
      return maybe_text(out, c.dtype);
    case kInMsgNelems:
      return c.in_msg_nelems >= 0 ? out.integer(c.in_msg_nelems) : out.null();
    case kMsgMb:
      return out.maybe_real(c.msg_size_mb);
    case kBytes:
      return std::isnan(c.msg_size_mb) ? out.null()
                                       : out.integer(std::llround(c.msg_size_mb * 1024.0 * 1024.0));
    case kTs:
      return out.maybe_int(e.ts_ns);
    case kDur:
      return out.maybe_int(e.dur_ns);
    case kEnd:
      return e.has_ts() && e.has_dur() ? out.integer(e.ts_ns + e.dur_ns) : out.null();
    case kStream:
      return out.maybe_int(c.kernel.stream);
    case kAlgbw:
      return out.maybe_real(c.bw.algbw_gbps);
    case kBusbw:
      return out.maybe_real(c.bw.busbw_gbps);
    default:
      return out.null();
  }
}

TableSource bind_collectives(const QueryContext& ctx) {
  const Trace& trace = ctx.trace();
  auto ix =
      ctx.entry().cached<Instances>("sql:collectives", [&] { return build_instances(trace); });
  auto uids = std::shared_ptr<const std::vector<Uid>>(ix, &ix->uids);
  return uid_rows(uids, kUid, [ix, &trace](size_t row, Uid, int column, CellSink& out) {
    collective_cell(trace, *ix, row, column, out);
  });
}

}  // namespace collectives_columns
}  // namespace

const TableDef& collectives_table() {
  static const TableDef def{
      "collectives",
      "collective kernels (NCCL / RCCL): process group, sequence, message size, bandwidths",
      {{"uid", ColType::Integer, "event uid of the collective kernel"},
       {"name", ColType::Text, "kernel name, e.g. ncclKernel_AllReduce_RING_LL_Sum_float(...)"},
       {"rank", ColType::Integer, "distributedInfo.rank of the trace (NULL when absent)"},
       {"world_size", ColType::Integer, "distributedInfo.world_size (NULL when absent)"},
       {"process_group", ColType::Text, "args['Process Group Name']"},
       {"group_ranks", ColType::Text, "args['Process Group Ranks'], e.g. [0, 1]"},
       {"group_size", ColType::Integer, "args['Group size']"},
       {"seq", ColType::Integer,
        "0-based order by start time within the process group (matches ranks' instances)"},
       {"collective", ColType::Text, "args['Collective name']: allreduce, broadcast, ..."},
       {"type", ColType::Text,
        "normalised collective: allreduce, reducescatter, allgather, alltoall, alltoallv, "
        "broadcast, reduce, other"},
       {"dtype", ColType::Text, "args.dtype, e.g. Float"},
       {"in_msg_nelems", ColType::Integer, "args['In msg nelems']"},
       {"msg_mb", ColType::Real,
        "message size in MiB (TraceLens 'Full msg size': the output for allgather, else the "
        "input)"},
       {"bytes", ColType::Integer, "message size in bytes (msg_mb x 2^20)"},
       {"ts", ColType::Integer, "kernel start, ns"},
       {"dur", ColType::Integer, "kernel duration, ns"},
       {"end", ColType::Integer, "ts + dur, ns"},
       {"stream", ColType::Integer, "args.stream"},
       {"algbw_gbps", ColType::Real, "algorithm bandwidth: msg size / dur, GiB/s (TraceLens GB/s)"},
       {"busbw_gbps", ColType::Real,
        "bus bandwidth: algbw x the nccl-tests factor (allreduce 2(n-1)/n, ...), GiB/s"}},
      collectives_columns::bind_collectives};
  return def;
}

}  // namespace jarvis::sql
