// Shared by the sweep tool adapters: handle lookup, table rows as JSON,
// optional CSV output.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "mcp/tool.h"

namespace jarvis::mcp::sweep_tools {

inline std::shared_ptr<const engine::Sweep> get_sweep(const json& args, const char* key = "sweep") {
  std::string handle = args.at(key).get<std::string>();
  auto s = engine::SweepStore::global().get(handle);
  if (!s)
    throw ToolError("unknown sweep handle '" + handle + "'; call load_sweep first",
                    ErrorKind::NotFound);
  return s;
}

inline json rows_json(const Table& t, size_t max_rows) {
  return engine::table_rows_json(t, max_rows);
}

// Writes the tables as CSVs under output_dir (and optionally one xlsx) when
// the argument is given; returns the files written. Both paths follow the
// rule of every tool's writes (PathPolicy::output_dir / output_file): a
// directory of the user's files, a workbook jarvis did not write or a trace
// is refused unless `overwrite`, and what was written is recorded.
inline json write_if_asked(const json& args, ToolContext& ctx, const std::vector<Table>& tables) {
  json files = json::array();
  if (!args.contains("output_dir")) {
    if (args.contains("xlsx")) throw ToolError("`xlsx` needs `output_dir` (the CSVs go there)");
    return files;
  }
  bool overwrite = args.value("overwrite", false);
  const PathPolicy& paths = ctx.paths();
  std::filesystem::path dir = paths.output_dir(args.at("output_dir").get<std::string>(), overwrite);
  std::string xlsx;
  if (args.contains("xlsx"))
    xlsx = paths.output_file(args.at("xlsx").get<std::string>(), ".xlsx", overwrite).string();
  try {
    for (const auto& f : engine::write_sweep_outputs(tables, dir.string(), xlsx)) {
      paths.note_written(f);
      files.push_back(f);
    }
  } catch (const std::runtime_error& e) {
    throw ToolError("cannot write the tables to " + dir.string() + ": " + e.what());
  }
  paths.mark_output_dir(dir);
  return files;
}

}  // namespace jarvis::mcp::sweep_tools
