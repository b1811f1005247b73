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

// Under AddressSanitizer, makes a fork() from a process with threads safe
// for the child's allocations: the sanitizer's allocator, thread registry
// and stack depot are locked around every fork (pthread_atfork), as LLVM's
// runtime does itself from LLVM 18 (llvm-project PR 75290). Debian 12's
// clang 14 does not: a child forked while another thread held one of those
// locks waited on it forever at its first allocation of that size. Does
// nothing in other builds (glibc's malloc is fork-safe on its own).
// Registered at start-up; returns whether the handlers are in place.
bool sanitizer_locks_held_across_fork();

}  // namespace jarvis
