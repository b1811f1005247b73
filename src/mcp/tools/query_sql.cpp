// query_sql: one read-only SQL statement over a loaded trace (src/sql/sql.h),
// or its catalog with schema=true.
#include <fmt/format.h>

#include <algorithm>

#include "engine/engine.h"
#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/trace_arg.h"

namespace jarvis::mcp {
namespace {

json cell_json(const Cell& c) {
  if (c.is_int()) return std::get<int64_t>(c.v);
  if (c.is_double()) return std::get<double>(c.v);
  if (c.is_bool()) return std::get<bool>(c.v);
  if (c.is_text()) return c.text();
  return nullptr;
}

ToolResult query_sql_tool(const json& args, ToolContext& ctx) {
  auto entry = trace_arg(args, ctx);
  if (args.at("schema").get<bool>()) {
    json tables = json::array();
    auto catalog = engine::sql_catalog(*entry);
    for (const auto& t : catalog) {
      json cols = json::array();
      for (const auto& c : t.columns)
        cols.push_back({{"name", c.name}, {"type", c.type}, {"doc", c.doc}});
      tables.push_back({{"name", t.name}, {"doc", t.doc}, {"columns", cols}});
    }
    return ToolResult({{"trace", entry->handle()}, {"tables", tables}},
                      fmt::format("{} tables; pass sql to query them", catalog.size()));
  }
  if (!args.contains("sql"))
    throw ToolError("give sql (one SELECT statement), or schema=true for the tables and columns");
  engine::SqlQueryLimits limits;
  // The engine stops one row past what the reply keeps, so a cut by the
  // reply and a cut by the engine both show.
  limits.max_rows = std::min<size_t>(row_limit(args), 10000);
  limits.max_bytes = 1u << 20;
  limits.timeout_ms = args.at("timeout_ms").get<int64_t>();
  engine::SqlQueryResult r = engine::run_query(*entry, args.at("sql").get<std::string>(), limits);
  json rows = json::array();
  for (const auto& row : r.table.rows) {
    json out = json::array();
    for (const Cell& c : row) out.push_back(cell_json(c));
    rows.push_back(std::move(out));
  }
  json result{{"trace", entry->handle()},
              {"columns", r.table.columns},
              {"rows", std::move(rows)},
              {"complete", !r.truncated},
              {"seconds", r.seconds}};
  if (r.truncated) result["cut_by"] = r.truncation;
  std::string text = fmt::format("{} row(s) x {} column(s) in {:.3f} s{}", r.table.rows.size(),
                                 r.table.columns.size(), r.seconds,
                                 r.truncated ? fmt::format(" (cut at the {})", r.truncation) : "");
  ToolResult out{result, text};
  out.rows("/rows");
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(query_sql, query_sql_tool);
}  // namespace jarvis::mcp
