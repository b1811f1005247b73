// One tool call in a worker process: a crash (a signal, an abort) in an
// analysis ends that call with a tool error, not the server and every
// session it holds (issue 60; docs/security.md "One bad call and the other
// sessions").
//
// The worker is forked from the server for the call, so it sees the parsed
// traces copy-on-write: nothing is reloaded or copied. It runs the handler,
// sends its progress and log notifications, the files it wrote and its
// result back over a pipe, and exits. What it derives from a trace (perf
// rows, the step model) dies with it: the next call derives it again.
#pragma once

#include <atomic>
#include <cstddef>
#include <string_view>

#include "mcp/tool.h"

namespace jarvis::mcp {

// Runs handler(args, ctx) in a forked worker and returns its result, or
// throws ToolError: the handler's own error (message and kind kept), or the
// worker's end by a signal. `cancelled` (the client's cancellation) kills
// the worker. When fork() fails, the call runs here instead.
ToolResult call_in_worker(const ToolHandler& handler, const json& args, ToolContext& ctx,
                          std::string_view tool, const std::atomic<bool>* cancelled);

// The server is stopping (SIGTERM): kills every worker running now and makes
// later calls fail at once, so that the transport's threads return instead
// of waiting for their calls. Returns how many workers it killed. (A server
// killed outright takes its workers with it: base/forked_worker.h.)
size_t end_all_workers();

}  // namespace jarvis::mcp
