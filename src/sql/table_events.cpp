// events: every element of traceEvents, by uid. Rows are the event store
// itself (row = uid): nothing is copied.
#include "sql/table_source.h"

namespace jarvis::sql {
namespace {
// Named: a unity build compiles the tables in one unit, each with its own Col.
namespace events_columns {

enum Col {
  kUid,
  kName,
  kCategory,
  kPhase,
  kTs,
  kDur,
  kEnd,
  kPid,
  kTid,
  kStream,
  kDevice,
  kCorrelation,
  kExternalId,
  kFlowId
};

static_assert(kFlowId == static_cast<int>(EventField::FlowId), "events: one column per EventField");

TableSource bind_events(const QueryContext& ctx) {
  const Trace& trace = ctx.trace();
  TableSource s;
  s.rows = trace.events.size();
  s.key_column = kUid;
  s.find_key = [n = s.rows](int64_t key) -> std::optional<size_t> {
    if (key < 0 || static_cast<uint64_t>(key) >= n) return std::nullopt;
    return static_cast<size_t>(key);
  };
  // Every column is an event field, in EventField's order.
  s.cell = [&trace](size_t row, int column, CellSink& out) {
    if (column < 0 || column > kFlowId) return out.null();
    event_cell(trace, static_cast<Uid>(row), static_cast<EventField>(column), out);
  };
  return s;
}

}  // namespace events_columns
}  // namespace

const TableDef& events_table() {
  static const TableDef def{
      "events",
      "every trace event (traceEvents element), by uid; times in ns",
      {{"uid", ColType::Integer, "event id: 0-based position in traceEvents (TraceLens UID)"},
       {"name", ColType::Text, "event name"},
       {"category", ColType::Text,
        "Kineto cat: cpu_op, kernel, cuda_runtime, python_function, ..."},
       {"phase", ColType::Text, "ph: X (complete), i (instant), s/f (flow), M (metadata)"},
       {"ts", ColType::Integer, "start, ns on the trace clock"},
       {"dur", ColType::Integer, "duration, ns (NULL for instants)"},
       {"end", ColType::Integer, "ts + dur, ns"},
       {"pid", ColType::Integer,
        "process id (GPU events: the device; text when the trace names it)"},
       {"tid", ColType::Integer,
        "thread id (GPU events: the stream; text when the trace names it)"},
       {"stream", ColType::Integer, "args.stream"},
       {"device", ColType::Integer, "args.device"},
       {"correlation", ColType::Integer, "args.correlation (links a launch to its GPU work)"},
       {"external_id", ColType::Integer, "args['External id'] (links a cpu_op to its launches)"},
       {"flow_id", ColType::Integer, "top-level id of flow events (ac2g / fwdbwd)"}},
      events_columns::bind_events};
  return def;
}

}  // namespace jarvis::sql
