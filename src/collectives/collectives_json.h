// JSON views of the collective results for the MCP tools.
#pragma once

#include <nlohmann/json.hpp>

#include "collectives/collectives.h"

namespace jarvis {
class LoadedTrace;
}

namespace jarvis::collectives {

// summary_json of a loaded trace (cached with the trace), or null when the
// trace has no collective kernel: the MCP trace summaries add it as
// "collectives" only when there are any.
nlohmann::json loaded_trace_collectives_json(const LoadedTrace& entry);

// {count, total_us, exposed_us, exposed_percent, top: [{collective, dtype,
// msg_size_mb, count, total_us, mean_busbw_gbps}]}.
nlohmann::json summary_json(const TraceCollectiveSummary& summary);

// The rows of a table as objects keyed by column (missing cells -> null).
nlohmann::json table_rows_json(const Table& table, size_t max_rows);

// {ranks, clock_offset_us, instance_count, summary, ranks_table, worst_skew}:
// the summary and rank tables in full, the `top_n` instances with the
// largest start skew.
nlohmann::json multi_rank_json(const CollectiveReportResult& result, size_t top_n);

}  // namespace jarvis::collectives
