// Subcommands of the `jarvis` binary. Each lives in its own cmd_*.cpp and
// returns the process exit code; errors go to stderr.
#pragma once

#include <string>
#include <vector>

namespace jarvis::cli {

using Args = std::vector<std::string>;

int cmd_info(const Args& args);
int cmd_prepare(const Args& args);
int cmd_analyze(const Args& args);
int cmd_report(const Args& args);
int cmd_serve(const Args& args);
int cmd_replay(const Args& args);
int cmd_compare(const Args& args);
int cmd_collectives(const Args& args);
int cmd_insights(const Args& args);
int cmd_render_findings(const Args& args);
int cmd_sweep(const Args& args);
int cmd_sweep_compare(const Args& args);
int cmd_rocprof_config(const Args& args);

// Small helpers shared by the subcommands.
// Value following `flag` in args (e.g. --out DIR), or "" when absent.
std::string flag_value(const Args& args, const std::string& flag);
bool has_flag(const Args& args, const std::string& flag);
// Positional arguments (those not starting with "--" and not a flag's value).
std::vector<std::string> positionals(const Args& args, const std::vector<std::string>& value_flags);

}  // namespace jarvis::cli
