// The arguments of the jarvis_bench modes that take `[--repeat N] TRACE...`.
#pragma once

#include <fmt/format.h>
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

struct TraceArgs {
  int repeat = 3;
  std::vector<std::string> traces;
};

// argv[1..] as `[--repeat N] TRACE...`; prints `usage` and returns nullopt
// when no trace is given.
inline std::optional<TraceArgs> parse_trace_args(int argc, char** argv, const char* usage) {
  TraceArgs args;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (a == "--repeat" && k + 1 < argc)
      args.repeat = std::max(1, std::atoi(argv[++k]));
    else
      args.traces.push_back(a);
  }
  if (args.traces.empty()) {
    fmt::print(stderr, "usage: {}\n", usage);
    return std::nullopt;
  }
  return args;
}
