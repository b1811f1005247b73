// kernels: the GPU events (kernels, memcpys, memsets) with the runtime call
// that launched them, the op that launcher belongs to and its category.
#include <iterator>

#include "perf/categories.h"
#include "sql/table_source.h"
#include "tree/call_tree.h"

namespace jarvis::sql {
namespace {
// Named: a unity build compiles the tables in one unit, each with its own Col.
namespace kernels_columns {

enum Col {
  kUid,
  kName,
  kCategory,
  kTs,
  kDur,
  kEnd,
  kPid,
  kTid,
  kStream,
  kDevice,
  kCorrelation,
  kLaunchUid,
  kLaunchName,
  kLaunchTs,
  kLaunchDelay,
  kOpUid,
  kOpName,
  kOpCategory,
  kCommunication,
};

// The leading columns, read off the event (table_source.h).
constexpr EventField kEventColumns[] = {
    EventField::Uid,    EventField::Name,   EventField::Category,   EventField::Ts,
    EventField::Dur,    EventField::End,    EventField::Pid,        EventField::Tid,
    EventField::Stream, EventField::Device, EventField::Correlation};
static_assert(std::size(kEventColumns) == kLaunchUid, "the event columns lead the table");

Uid launch_of(const CallTree& tree, Uid uid) {
  Uid p = tree.parent(uid);
  return p != kNoUid && is_runtime_cat(tree.cat(p)) ? p : kNoUid;
}

TableSource bind_kernels(const QueryContext& ctx) {
  const Trace& trace = ctx.trace();
  const CallTree& tree = ctx.tree();
  // Borrow the tree's list: the entry's cache keeps the tree alive for as
  // long as the loaded trace (and so this query) lives.
  auto uids = std::shared_ptr<const std::vector<Uid>>(std::shared_ptr<const void>(),
                                                      &tree.gpu_event_uids());
  return uid_rows(uids, kUid, [&trace, &tree](size_t, Uid uid, int column, CellSink& out) {
    const Event& e = trace.events[uid];
    if (column >= 0 && static_cast<size_t>(column) < std::size(kEventColumns))
      return event_cell(trace, uid, kEventColumns[column], out);
    switch (column) {
      case kLaunchUid:
        out.maybe_uid(launch_of(tree, uid));
        break;
      case kLaunchName: {
        Uid l = launch_of(tree, uid);
        if (l == kNoUid)
          out.null();
        else
          out.text(trace.name(l), true);
        break;
      }
      case kLaunchTs: {
        Uid l = launch_of(tree, uid);
        if (l == kNoUid)
          out.null();
        else
          out.maybe_int(trace.events[l].ts_ns);
        break;
      }
      case kLaunchDelay: {
        Uid l = launch_of(tree, uid);
        if (l == kNoUid || !e.has_ts() || !trace.events[l].has_ts())
          out.null();
        else
          out.integer(e.ts_ns - trace.events[l].ts_ns);
        break;
      }
      case kOpUid:
        out.maybe_uid(tree.launcher(uid));
        break;
      case kOpName: {
        Uid l = tree.launcher(uid);
        if (l == kNoUid)
          out.null();
        else
          out.text(trace.name(l), true);
        break;
      }
      case kOpCategory: {
        Uid l = tree.launcher(uid);
        if (l == kNoUid)
          out.null();
        else
          out.text(perf::op_category(trace.name(l), trace.name(uid)), false);
        break;
      }
      case kCommunication:
        out.integer(trace.is_communication(uid) ? 1 : 0);
        break;
      default:
        out.null();
    }
  });
}

}  // namespace kernels_columns
}  // namespace

const TableDef& kernels_table() {
  static const TableDef def{
      "kernels",
      "GPU events (kernel, gpu_memcpy, gpu_memset) with their launch call and launching op",
      {{"uid", ColType::Integer, "event uid"},
       {"name", ColType::Text, "kernel name"},
       {"category", ColType::Text, "kernel, gpu_memcpy or gpu_memset"},
       {"ts", ColType::Integer, "start on the GPU, ns"},
       {"dur", ColType::Integer, "duration, ns"},
       {"end", ColType::Integer, "ts + dur, ns"},
       {"pid", ColType::Integer, "process id (the device in Kineto traces)"},
       {"tid", ColType::Integer, "thread id (the stream in Kineto traces)"},
       {"stream", ColType::Integer, "args.stream"},
       {"device", ColType::Integer, "args.device"},
       {"correlation", ColType::Integer, "args.correlation"},
       {"launch_uid", ColType::Integer,
        "uid of the runtime call that launched it (cudaLaunchKernel, hipLaunchKernel, ...); NULL "
        "when unlinked"},
       {"launch_name", ColType::Text, "name of that runtime call"},
       {"launch_ts", ColType::Integer, "start of that runtime call, ns"},
       {"launch_delay", ColType::Integer, "ts - launch_ts: launch-to-start delay, ns"},
       {"op_uid", ColType::Integer,
        "uid of the launching op (nearest cpu_op above the launch; TraceLens launcher); NULL for "
        "unlinked and communication kernels"},
       {"op_name", ColType::Text, "name of the launching op"},
       {"op_category", ColType::Text, "perf-model category of the launching op (GEMM, SDPA, ...)"},
       {"is_communication", ColType::Integer, "1 for NCCL / RCCL kernels"}},
      kernels_columns::bind_kernels};
  return def;
}

}  // namespace jarvis::sql
