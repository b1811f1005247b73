// Runs one shell command of the user's for `jarvis ab` / `jarvis calibrate`:
// /bin/sh -c COMMAND in its own process group, with extra environment
// variables, stdin from /dev/null and stdout + stderr to a log file, killed
// (the whole group) past a time limit. Only the CLI runs user commands; no
// MCP tool reaches this (docs/security.md).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace jarvis::ab {

using EnvList = std::vector<std::pair<std::string, std::string>>;

struct CommandRun {
  int exit_code = -1;  // the shell's exit status; 128 + N for signal N
  bool timed_out = false;
  double wall_s = 0;
};

CommandRun run_shell(const std::string& command, const EnvList& env, const std::string& log_path,
                     double timeout_s);

// The last `max_bytes` of a log, for an error message ("" when unreadable).
std::string log_tail(const std::string& log_path, size_t max_bytes = 1500);

// "K=V" into (K, V); throws UsageError naming the flag when there is no '='
// or the name is empty.
std::pair<std::string, std::string> parse_env_assignment(const std::string& text,
                                                         const std::string& flag);

}  // namespace jarvis::ab
