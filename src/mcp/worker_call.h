// One tool call in a worker process: a crash (a signal, an abort) in an
// analysis ends that call with a tool error, not the server and every
// session it holds (issue 60; docs/security.md "One bad call and the other
// sessions").
//
// The worker is forked from the server for the call, so it sees the parsed
// traces copy-on-write: nothing is reloaded or copied. It runs the handler,
// sends its progress and log notifications, the files it wrote, its result
// and then what it keeps for later calls (ToolContext::keep) back over a
// pipe, and exits; the server answers once the pipe closes (the server's
// own calls: once the result has come) and reaps the worker beside that.
// Whatever else it derives from a trace dies with it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <sys/types.h>

#include "mcp/tool.h"

namespace jarvis::mcp {

// Runs handler(args, ctx) in a forked worker and returns its result, or
// throws ToolError: the handler's own error (message and kind kept), or the
// worker's end by a signal. `cancelled` (the client's cancellation) kills
// the worker. When fork() fails, the call runs here instead.
//
// `memory_budget` (--max-memory; 0 = none) covers this process and all its
// workers together (issue 74 point 8): a worker is not started when the
// server's resident memory plus what the live workers hold of their own
// leaves less than kWorkerMemoryFloor of it; a worker may map at most what
// was left when it started (RLIMIT_AS); and while workers run, the sum is
// read every kMemoryCheckEvery: past the budget the largest worker is
// killed and its call fails naming the figures.
//
// `answer_at_result`: the call returns once the worker's result has come,
// and what the worker keeps for later calls (ToolContext::keep, sent after
// its result: an x256 insights analysis is 6 MB of CBOR, 40-70 ms to encode
// and send) is read on a thread of its own, which puts it on the trace's
// entry of ctx.traces().cache() and reaps the worker. A later call that may
// read a kept value waits for it first (wait_for_kept_values). Only for a
// caller whose cache outlives that thread: the server, whose destructor
// calls abandon_kept_values.
ToolResult call_in_worker(const ToolHandler& handler, const json& args, ToolContext& ctx,
                          std::string_view tool, const std::atomic<bool>* cancelled,
                          uint64_t memory_budget = 0, bool answer_at_result = false);

// Waits until the kept values that workers of calls answered already are
// still sending for `cache` are in place (at most `at_most`: past it the
// caller goes on without them and derives what it needs). Returns whether
// none is left pending.
bool wait_for_kept_values(const TraceCache& cache, std::chrono::milliseconds at_most);
// Ends the workers still sending kept values for `cache` and waits for the
// threads that read them: called before the cache is destroyed.
void abandon_kept_values(const TraceCache& cache);

// A worker that uses no CPU time for this long (30 s unless set), sends
// nothing and has every thread asleep is stuck (a lock another thread of
// the server held at the fork): it is killed and the call runs once more in
// a new worker; stuck twice, the call fails with a tool error.
void set_worker_stuck_after(std::chrono::milliseconds after);
// The least of the budget a worker is started with.
inline constexpr uint64_t kWorkerMemoryFloor = uint64_t{32} << 20;
// How often the memory of the process tree is read while workers run.
inline constexpr int kMemoryCheckEveryMs = 50;

// The memory of this process and its live workers, as the budget counts it:
// this process's resident set plus each worker's private pages (those it
// wrote or allocated since the fork: the pages it still shares with this
// process are counted once, here).
struct TreeMemory {
  uint64_t server = 0, workers = 0;
  size_t count = 0;            // live workers
  pid_t largest = 0;           // the worker holding the most of its own
  uint64_t largest_bytes = 0;  // and how much
  uint64_t total() const { return server + workers; }
};
TreeMemory tree_memory();

// The server is stopping (SIGTERM): kills every worker running now and makes
// later calls fail at once, so that the transport's threads return instead
// of waiting for their calls. Returns how many workers it killed. (A server
// killed outright takes its workers with it: base/forked_worker.h.)
size_t end_all_workers();

}  // namespace jarvis::mcp
