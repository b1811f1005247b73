// Subcommands of the `jarvis` binary, parsed with CLI11.
//
// Each cmd_*.cpp adds its subcommand (options, help text, validators) to the
// application and returns the function that runs it once parsing succeeded.
// Exit codes, the same for every command (docs/cli.md):
//   0 ok, 1 input or analysis error, 2 usage error (unknown flag, bad value).
#pragma once

#include <functional>
#include <string>

#include "base/error.h"

namespace CLI {
class App;
}

namespace jarvis::cli {

// A command line that parsed but does not make sense (e.g. --svg-dir without
// --html): exit code 2, like a parse error (base/error.h maps the codes).
using jarvis::UsageError;

using Runner = std::function<int()>;

Runner add_info(CLI::App& app);
Runner add_prepare(CLI::App& app);
Runner add_analyze(CLI::App& app);
Runner add_report(CLI::App& app);
Runner add_serve(CLI::App& app);
Runner add_replay(CLI::App& app);
Runner add_compare(CLI::App& app);
Runner add_collectives(CLI::App& app);
Runner add_critical_path(CLI::App& app);
Runner add_what_if(CLI::App& app);
Runner add_insights(CLI::App& app);
Runner add_memory(CLI::App& app);
Runner add_sql(CLI::App& app);
Runner add_render_findings(CLI::App& app);
Runner add_final_report(CLI::App& app);
Runner add_sweep(CLI::App& app);
Runner add_sweep_compare(CLI::App& app);
Runner add_rocprof_config(CLI::App& app);
Runner add_gate(CLI::App& app);
Runner add_ab(CLI::App& app);
Runner add_calibrate(CLI::App& app);

// The jarvis version ("0.9.0"), from the CMake project version.
const char* version();

}  // namespace jarvis::cli
