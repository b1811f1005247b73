// memory: the allocator samples of a profile_memory=True trace (one row per
// [memory] event), in the order the allocator saw them. Empty for a trace
// recorded without profile_memory.
#include "explore/trace_store.h"
#include "sql/table_source.h"
#include "trace/memory_events.h"

namespace jarvis::sql {
namespace {
// Named: a unity build compiles the tables in one unit, each with its own Col.
namespace memory_columns {

enum Col { kUid, kTs, kPid, kTid, kDevice, kAddr, kBytes, kTotalAllocated, kTotalReserved };

struct Samples {
  std::vector<MemorySample> rows;
};

TableSource bind_memory(const QueryContext& ctx) {
  const Trace& trace = ctx.trace();
  auto samples =
      ctx.entry().cached<Samples>("sql:memory", [&] { return Samples{memory_samples(trace)}; });
  TableSource s;
  s.rows = samples->rows.size();
  s.cell = [samples, &trace](size_t row, int column, CellSink& out) {
    const MemorySample& m = samples->rows[row];
    const ThreadKey& thread = trace.threads[m.thread];
    switch (column) {
      case kUid:
        out.maybe_uid(m.uid);
        break;
      case kTs:
        out.maybe_int(m.ts_ns);
        break;
      case kPid:
        out.proc_id(trace, thread.pid);
        break;
      case kTid:
        out.proc_id(trace, thread.tid);
        break;
      case kDevice:
        out.text(memory_device_name(m.device_type, m.device_id), false);
        break;
      case kAddr:
        out.integer(static_cast<int64_t>(m.addr));
        break;
      case kBytes:
        out.integer(m.bytes);
        break;
      case kTotalAllocated:
        out.integer(m.total_allocated);
        break;
      case kTotalReserved:
        out.integer(m.total_reserved);
        break;
      default:
        out.null();
    }
  };
  return s;
}

}  // namespace memory_columns
}  // namespace

const TableDef& memory_table() {
  static const TableDef def{
      "memory",
      "allocator samples of a profile_memory=True trace ([memory] events), in time order",
      {{"uid", ColType::Integer, "event uid of the [memory] event"},
       {"ts", ColType::Integer, "time, ns"},
       {"pid", ColType::Integer, "process id"},
       {"tid", ColType::Integer, "thread id of the allocating op"},
       {"device", ColType::Text, "cpu, cuda:N, hip:N"},
       {"addr", ColType::Integer, "block address (as a signed 64-bit integer)"},
       {"bytes", ColType::Integer, "bytes allocated (> 0) or freed (< 0)"},
       {"total_allocated", ColType::Integer, "allocator's allocated total after this call, bytes"},
       {"total_reserved", ColType::Integer, "allocator's reserved total after this call, bytes"}},
      memory_columns::bind_memory};
  return def;
}

}  // namespace jarvis::sql
