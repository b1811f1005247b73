// Forked children that die with their parent and at a deadline (issue 74).
// call_forked runs one piece of work in a child process forked for it,
// killed at a deadline: a time limit checked between steps (SQLite's
// progress handler) cannot end one long step, and a SQL function over a
// 4 MB value with a 200 KB argument ran for minutes past a 3 s limit. A
// process can always be killed, whatever it is doing; the child sees the
// parent's memory copy-on-write, so nothing is copied on the way in.
// (Implemented in forked_worker.cpp, beside the worker flag it sets.)
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "base/error.h"

namespace jarvis {

// Called in a child right after fork(), `parent` being getpid() before it:
// the kernel kills the child (SIGKILL) when the thread that forked it ends,
// so a worker never outlives a server killed by SIGKILL or the OOM killer
// (issue 74 point 3). A parent that died before the call is caught by
// comparing getppid() with `parent`: the child exits at once.
void die_with_parent(pid_t parent);

// How long past its own time limit a piece of work may run before its
// process is killed: the limit checked between steps normally ends it first,
// with its own message.
inline constexpr std::chrono::milliseconds kTimeLimitGrace{1000};

// The work ran past its time limit plus kTimeLimitGrace and was killed.
class TimeLimitKilled : public ErrorOf<ErrorKind::Cancelled> {
 public:
  using ErrorOf::ErrorOf;
};

// Runs work() in a forked child and returns the text it returned. The child
// is killed kTimeLimitGrace past `time_limit_ms` (counted from this call),
// or within 100 ms of `cancelled` turning true; it dies with this process.
// An exception thrown by work() is thrown here again as an Error of the same
// kind and message; a child ending by a signal, as an Internal error naming
// `what` and the signal. When fork() fails the work runs here, unbounded.
std::string call_forked(const std::function<std::string()>& work, int64_t time_limit_ms,
                        const std::string& what, const std::atomic<bool>* cancelled = nullptr);

}  // namespace jarvis
