// query_sql: one read-only SQL statement over a loaded trace (src/sql/sql.h)
// or a loaded sweep (src/sql/sweep_sql.h), or the catalog with schema=true.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "engine/engine.h"
#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/sweep_common.h"
#include "mcp/tools/trace_arg.h"

namespace jarvis::mcp {
namespace {

// How a BLOB value reads in the rows (sql::QueryResult::blob_columns).
constexpr const char* kBlobEncoding = "sql_hex_literal";

json cell_json(const Cell& c) {
  if (c.is_int()) return std::get<int64_t>(c.v);
  if (c.is_double()) return std::get<double>(c.v);
  if (c.is_bool()) return std::get<bool>(c.v);
  if (c.is_text()) return c.text();
  return nullptr;
}

json tables_json(const std::vector<engine::SqlTableInfo>& catalog) {
  json tables = json::array();
  for (const auto& t : catalog) {
    json cols = json::array();
    for (const auto& c : t.columns)
      cols.push_back({{"name", c.name}, {"type", c.type}, {"doc", c.doc}});
    tables.push_back({{"name", t.name}, {"doc", t.doc}, {"columns", cols}});
  }
  return tables;
}

// The rank traces of `traces` (handles or paths under the roots) as the
// runs of one configuration (engine::load_sweep_files).
std::shared_ptr<const engine::Sweep> traces_sweep(const json& args, ToolContext& ctx) {
  std::vector<std::string> paths;
  for (const json& t : args.at("traces")) {
    auto entry = trace_arg(json{{"trace", t}}, ctx);
    paths.push_back(entry->path());
  }
  engine::SweepLoadOptions options;
  options.cache_dir = "none";  // the traces are loaded here; nothing is written for them
  try {
    return std::make_shared<const engine::Sweep>(engine::load_sweep_files(paths, options));
  } catch (const engine::SweepError& e) {
    throw ToolError(e.what());
  }
}

// The first rows as text, the same values as the structured rows (long
// texts shortened): what a client that shows only the text still reads.
std::string rows_text(const Table& table, const json& rows, size_t limit) {
  constexpr size_t kCell = 48;
  const size_t kRows = std::min<size_t>(10, limit);
  auto shown = [](const json& v) {
    std::string s = v.is_string() ? v.get<std::string>() : v.dump();
    return s.size() > kCell ? s.substr(0, kCell - 3) + "..." : s;
  };
  std::string text = fmt::format("{}\n", fmt::join(table.columns, " | "));
  for (size_t k = 0; k < rows.size() && k < kRows; ++k) {
    std::vector<std::string> cells;
    for (const json& v : rows[k]) cells.push_back(shown(v));
    text += fmt::format("{}\n", fmt::join(cells, " | "));
  }
  if (rows.size() > kRows) text += fmt::format("... {} more row(s) in rows\n", rows.size() - kRows);
  return text;
}

ToolResult query_sql_tool(const json& args, ToolContext& ctx) {
  bool on_traces = args.contains("traces");
  bool on_sweep = args.contains("sweep") || on_traces;
  if (int(args.contains("sweep")) + int(args.contains("trace")) + int(on_traces) != 1)
    throw ToolError(
        "give one of trace (a load_trace handle or path), traces (several rank traces) or sweep "
        "(a load_sweep handle)");
  std::shared_ptr<const LoadedTrace> entry;
  std::shared_ptr<const engine::Sweep> sweep;
  std::string key = on_traces ? "traces" : (on_sweep ? "sweep" : "trace");
  json name;
  if (on_traces) {
    sweep = traces_sweep(args, ctx);
    name = args.at("traces");
  } else if (on_sweep) {
    sweep = sweep_tools::get_sweep(args);
    name = args.at("sweep").get<std::string>();
  } else {
    entry = trace_arg(args, ctx);
    name = entry->handle();
  }
  if (args.at("schema").get<bool>()) {
    auto catalog = on_sweep ? engine::sweep_catalog(*sweep) : engine::sql_catalog(*entry);
    return ToolResult({{key, name}, {"tables", tables_json(catalog)}},
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
  limits.cancelled = ctx.cancel_flag_;  // a cancelled call stops its query (in the server)
  const std::string& sql = args.at("sql").get_ref<const std::string&>();
  engine::SqlQueryResult r;
  size_t loaded = 0;
  // In a worker, the server kills the query just past its limit, even inside
  // one SQLite function call the limit's own check cannot reach.
  ctx.start_time_limit(limits.timeout_ms);
  if (on_sweep) {
    // A run's trace is read only under the roots (a sweep reopened from its
    // manifest names paths the walk never admitted); the call's own cache
    // frees the runs it stops keeping, and no handle joins the session's list.
    const PathPolicy& paths = ctx.paths();
    engine::SqlSweepTraces traces([&](const engine::SweepRun& run) {
      return paths.resolve(run.input.path, /*must_exist=*/true, false).string();
    });
    r = engine::run_sweep_query(*sweep, sql, limits, &traces);
    loaded = traces.loads();
  } else {
    r = engine::run_query(*entry, sql, limits);
  }
  json rows = json::array();
  for (const auto& row : r.table.rows) {
    json out = json::array();
    for (const Cell& c : row) out.push_back(cell_json(c));
    rows.push_back(std::move(out));
  }
  json result{{key, name},
              {"columns", r.table.columns},
              {"rows", std::move(rows)},
              {"complete", !r.truncated},
              {"seconds", r.seconds}};
  if (on_sweep) result["traces_loaded"] = loaded;
  if (r.truncated) result["cut_by"] = r.truncation;
  if (!r.blob_columns.empty()) {
    result["blob_columns"] = r.blob_columns;
    result["blob_encoding"] = kBlobEncoding;
  }
  std::string text = fmt::format("{} row(s) x {} column(s) in {:.3f} s{}{}\n", r.table.rows.size(),
                                 r.table.columns.size(), r.seconds,
                                 on_sweep ? fmt::format(" ({} run trace(s) read)", loaded) : "",
                                 r.truncated ? fmt::format(" (cut at the {})", r.truncation) : "");
  if (!r.blob_columns.empty())
    text += fmt::format("BLOB values of {} are SQL hex literals (x'ff00', blob_encoding).\n",
                        fmt::join(r.blob_columns, ", "));
  text += rows_text(r.table, result["rows"], row_limit(args));
  ToolResult out{result, text};
  out.rows("/rows");
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(query_sql, query_sql_tool);
}  // namespace jarvis::mcp
