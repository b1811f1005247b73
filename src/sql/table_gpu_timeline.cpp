// gpu_timeline: the report's GPU time breakdown (computation, communication,
// memcpy, idle, ...) from the trace's cached timeline, without building the
// rest of the report.
#include "explore/trace_store.h"
#include "report/gpu_timeline.h"
#include "sql/table_source.h"

namespace jarvis::sql {
namespace {

TableSource bind_gpu_timeline(const QueryContext& ctx) {
  auto timeline = trace_timeline(ctx.entry());
  if (!timeline)
    throw std::runtime_error("gpu_timeline: the trace has no GPU event linked to a launch");
  auto table = std::make_shared<const Table>(gpu_timeline_table(*timeline));
  return sheet_source(table);
}

}  // namespace

const TableDef& gpu_timeline_table_def() {
  static const TableDef def{"gpu_timeline",
                            "GPU time by type (the report's gpu_timeline sheet): busy, "
                            "computation, communication, idle, ...",
                            {{"type", ColType::Text,
                              "time category: total_time, busy_time, computation_time, "
                              "exposed_comm_time, idle_time, ..."},
                             {"time ms", ColType::Real, "time in ms"},
                             {"percent", ColType::Real, "share of total_time, %"}},
                            bind_gpu_timeline};
  return def;
}

}  // namespace jarvis::sql
