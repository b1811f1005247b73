// Whether this process is a forked worker of the MCP server (one tool call
// run in a child process so that a crash ends that call, not the server;
// src/mcp/worker_call.h). A worker has one thread: a lock that another
// thread of the server held at the fork stays held forever in the child, so
// the caches that lock per artefact build without their lock there instead
// of waiting (session/trace_cache.h).
#pragma once

namespace jarvis {

bool in_forked_worker();
// Called once in the child, right after fork().
void mark_forked_worker();

}  // namespace jarvis
