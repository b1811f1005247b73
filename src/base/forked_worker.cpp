#include "base/forked_worker.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "base/forked_call.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JARVIS_ADDRESS_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define JARVIS_ADDRESS_SANITIZER 1
#endif

#if JARVIS_ADDRESS_SANITIZER
// The runtime's own lock functions (compiler-rt: lsan_common.h,
// sanitizer_stackdepot.h), linked statically into every ASan program; weak,
// so that a runtime without them leaves the handlers out.
namespace __lsan {
void LockAllocator() __attribute__((weak));
void UnlockAllocator() __attribute__((weak));
void LockThreadRegistry() __attribute__((weak));
void UnlockThreadRegistry() __attribute__((weak));
}  // namespace __lsan
namespace __sanitizer {
void StackDepotLockAll() __attribute__((weak));
void StackDepotUnlockAll() __attribute__((weak));
}  // namespace __sanitizer
#endif

namespace jarvis {
namespace {
std::atomic<bool> forked_worker{false};

#if JARVIS_ADDRESS_SANITIZER
void lock_sanitizer_for_fork() {
  __lsan::LockThreadRegistry();
  __lsan::LockAllocator();
  __sanitizer::StackDepotLockAll();
}
void unlock_sanitizer_after_fork() {
  __sanitizer::StackDepotUnlockAll();
  __lsan::UnlockAllocator();
  __lsan::UnlockThreadRegistry();
}
#endif

bool register_sanitizer_fork_handlers() {
#if JARVIS_ADDRESS_SANITIZER
  if (!__lsan::LockAllocator || !__lsan::UnlockAllocator || !__lsan::LockThreadRegistry ||
      !__lsan::UnlockThreadRegistry || !__sanitizer::StackDepotLockAll ||
      !__sanitizer::StackDepotUnlockAll)
    return false;
  // Registered before main: glibc runs the prepare handlers last registered
  // first, so these run last, right before the fork, after any library's
  // own (which may allocate).
  return ::pthread_atfork(lock_sanitizer_for_fork, unlock_sanitizer_after_fork,
                          unlock_sanitizer_after_fork) == 0;
#else
  return false;
#endif
}
const bool kSanitizerForkHandlers = register_sanitizer_fork_handlers();
}  // namespace

bool sanitizer_locks_held_across_fork() {
  return kSanitizerForkHandlers;
}

bool in_forked_worker() {
  return forked_worker.load(std::memory_order_relaxed);
}
void mark_forked_worker() {
  forked_worker.store(true, std::memory_order_relaxed);
}

void die_with_parent(pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent may have died between fork() and prctl(): the signal would
  // then never come, and the child has been handed to another process.
  if (::getppid() != parent) ::_exit(5);
}

namespace {

using Clock = std::chrono::steady_clock;

// The child's answer on the pipe: 'r' and the text, or 'e', the error's
// kind (one byte) and its message; then the pipe closes.
constexpr char kReturned = 'r', kThrew = 'e';

void write_all(int fd, const char* p, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(3);  // the parent is gone: nobody to answer
    p += n;
    size -= static_cast<size_t>(n);
  }
}

[[noreturn]] void run_child(int fd, const std::function<std::string()>& work) {
  mark_forked_worker();
  std::string answer;
  try {
    answer = kReturned + work();
  } catch (const std::exception& e) {
    answer = std::string{kThrew, static_cast<char>(error_kind_of(e))} + e.what();
  }
  write_all(fd, answer.data(), answer.size());
  ::_exit(0);  // no destructors, no atexit handlers: they belong to the parent
}

struct Read {
  std::string bytes;
  bool killed_at_limit = false;
};

// Reads the child's answer until the pipe closes, killing the child at
// `kill_at` or when `cancelled` turns true.
Read read_answer(int fd, pid_t pid, Clock::time_point kill_at, const std::atomic<bool>* cancelled) {
  Read got;
  bool killed = false;
  char chunk[1 << 16];
  for (;;) {
    if (!killed && (Clock::now() >= kill_at || (cancelled && cancelled->load()))) {
      got.killed_at_limit = Clock::now() >= kill_at;
      ::kill(pid, SIGKILL);
      killed = true;
    }
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, 100);
    if (ready <= 0) continue;  // EINTR or a tick: check the deadline again
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return got;
    got.bytes.append(chunk, static_cast<size_t>(n));
  }
}

std::string signal_name(int sig) {
  const char* name = sigabbrev_np(sig);
  return name ? fmt::format("SIG{}", name) : fmt::format("signal {}", sig);
}

}  // namespace

std::string call_forked(const std::function<std::string()>& work, int64_t time_limit_ms,
                        const std::string& what, const std::atomic<bool>* cancelled) {
  const Clock::time_point kill_at = Clock::now() +
                                    std::chrono::milliseconds(std::max<int64_t>(0, time_limit_ms)) +
                                    kTimeLimitGrace;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return work();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return work();  // no process to be had: the work still runs
  }
  if (pid == 0) {
    die_with_parent(parent);
    ::close(fds[0]);
    // On a thread of its own: glibc gives a new thread a fresh arena, so the
    // work's allocations do not copy the parent's free lists page by page.
    std::thread child([&] { run_child(fds[1], work); });
    child.join();
    ::_exit(4);  // not reached: run_child exits
  }
  ::close(fds[1]);
  Read got = read_answer(fds[0], pid, kill_at, cancelled);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const bool answered = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !got.bytes.empty();
  if (answered && got.bytes[0] == kReturned) return got.bytes.substr(1);
  if (answered && got.bytes[0] == kThrew && got.bytes.size() >= 2)
    throw Error(static_cast<ErrorKind>(got.bytes[1]), got.bytes.substr(2));
  if (got.killed_at_limit)
    throw TimeLimitKilled(fmt::format(
        "{} ran past its time limit ({} ms) inside one step the limit cannot interrupt (a SQL "
        "function over a long value); it was stopped {} ms later. Narrow it or raise the limit",
        what, time_limit_ms, kTimeLimitGrace.count()));
  if (cancelled && cancelled->load()) throw Error(ErrorKind::Cancelled, what + " cancelled");
  throw Error(
      ErrorKind::Internal,
      fmt::format("{} crashed in its child process ({})", what,
                  WIFSIGNALED(status) ? signal_name(WTERMSIG(status))
                                      : fmt::format("exit status {}", WEXITSTATUS(status))));
}

}  // namespace jarvis
