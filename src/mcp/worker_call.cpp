#include "mcp/worker_call.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "base/forked_call.h"
#include "base/forked_worker.h"
#include "base/phase_timer.h"
#include "engine/engine.h"
#include "mcp/worker_frames.h"

namespace jarvis::mcp {
namespace {

using Frame = WorkerFrameKind;

bool write_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void send(int fd, Frame kind, const json& payload) {
  const std::vector<uint8_t> frame = encode_worker_frame(kind, payload);
  if (!write_all(fd, frame.data(), frame.size()))
    ::_exit(3);  // the server is gone: nobody to answer
}

json result_to_json(const ToolResult& r, const json& caveats) {
  json rows = json::array();
  for (const auto& list : r.row_lists)
    rows.push_back({list.pointer, list.total ? json(*list.total) : json()});
  return {{"structured", r.structured}, {"text", r.text}, {"content", r.content}, {"rows", rows},
          {"full_only", r.full_only},   {"next", r.next}, {"caveats", caveats}};
}

ToolResult result_from_json(const json& j, ToolContext& ctx) {
  ToolResult r;
  r.structured = j.at("structured");
  r.text = j.at("text").get<std::string>();
  r.content = j.at("content");
  for (const auto& row : j.at("rows"))
    r.row_lists.push_back(
        {row.at(0).get<std::string>(),
         row.at(1).is_null() ? std::nullopt : std::optional<size_t>(row.at(1).get<size_t>())});
  r.full_only = j.at("full_only").get<std::vector<std::string>>();
  r.next = j.at("next");
  for (const auto& c : j.at("caveats")) ctx.add_trace_caveats(c.at("trace").get<std::string>(), c);
  return r;
}

json written_added(const PathPolicy::WrittenState& before, const PathPolicy::WrittenState& after) {
  json written = json::array(), claimed = json::array();
  for (const auto& p : after.written)
    if (!before.written.count(p)) written.push_back(p);
  for (const auto& p : after.claimed)
    if (!before.claimed.count(p)) claimed.push_back(p);
  return {{"written", written}, {"claimed", claimed}};
}

// The server's sockets (its listener, every client's connection) are not a
// worker's: a copy held open in the child keeps a departed client's
// connection alive, so the server's writes to it do not fail and the
// disconnect that should cancel the call goes unseen until the worker ends.
// The standard streams stay (stderr carries its diagnostics).
void close_inherited_sockets() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return;
  std::vector<int> sockets;
  while (dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    struct stat st;
    if (end != entry->d_name && *end == '\0' && fd > 2 && fd != ::dirfd(dir) &&
        ::fstat(static_cast<int>(fd), &st) == 0 && S_ISSOCK(st.st_mode))
      sockets.push_back(static_cast<int>(fd));
  }
  ::closedir(dir);
  for (int fd : sockets) ::close(fd);
}

[[noreturn]] void run_worker(int fd, const ToolHandler& handler, const json& args, ToolContext& ctx,
                             std::string_view tool, uint64_t headroom) {
  mark_forked_worker();
  const auto before = ctx.paths().written_state();
  ctx.on_progress = [fd](double done, double total, const std::string& message) {
    send(fd, Frame::kProgress, {done, total, message});
  };
  ctx.on_log = [fd](LogLevel level, const std::string& message) {
    send(fd, Frame::kLog, {static_cast<int>(level), message});
  };
  ctx.on_client_request = [](const std::string& method, const json&) -> json {
    throw ToolError(fmt::format("{}: requests to the client are not sent from a worker", method));
  };
  ctx.on_time_limit = [fd](int64_t ms) { send(fd, Frame::kTimeLimit, ms); };
  // What the call keeps for the session's later calls goes after its result:
  // the server reads the result first, and keeps the value's bytes without
  // decoding them (6 MB for an x256 trace's insights).
  struct Kept {
    FileIdentity id;
    std::string key;
    std::shared_ptr<const json> value;
  };
  std::vector<Kept> kept;
  std::mutex kept_mutex;
  ctx.on_keep = [&](const FileIdentity& id, const std::string& key,
                    std::shared_ptr<const json> value) {
    std::lock_guard lock(kept_mutex);
    kept.push_back({id, key, std::move(value)});
  };
  ctx.cancel_flag_ = nullptr;  // the server kills a cancelled worker
  std::optional<json> result;
  try {
    std::optional<PhaseTimer> t(std::in_place, "worker/handler");
    ToolResult handled = handler(args, ctx);
    t.emplace("worker/result_to_json");
    result = result_to_json(handled, ctx.trace_caveats());
  } catch (const std::runtime_error& e) {
    send(fd, Frame::kError, {e.what(), static_cast<int>(error_kind_of(e))});
  } catch (const std::bad_alloc&) {
    send(fd, Frame::kError,
         {headroom > 0
              ? fmt::format("{} needed more memory than its worker process may take: {} MiB, "
                            "what the server's --max-memory budget had left when the call "
                            "started (the server and its other workers hold the rest); narrow "
                            "the call, retry when other calls end, or raise --max-memory",
                            tool, headroom >> 20)
              : fmt::format("{} ran out of memory in its worker process", tool),
          static_cast<int>(ErrorKind::Unsupported)});
  } catch (const std::exception& e) {
    send(fd, Frame::kError,
         {fmt::format("{} failed on this input: {}", tool, e.what()),
          static_cast<int>(error_kind_of(e))});
  }
  send(fd, Frame::kWritten, written_added(before, ctx.paths().written_state()));
  if (result) {
    PhaseTimer t("worker/send_result");
    send(fd, Frame::kResult, *result);
  }
  {
    PhaseTimer t("worker/send_kept");
    std::lock_guard lock(kept_mutex);
    for (const Kept& k : kept) {
      const std::vector<uint8_t> frame =
          encode_kept_frame({k.id.device, k.id.inode, k.id.size, k.id.mtime_ns}, k.key, *k.value);
      if (!write_all(fd, frame.data(), frame.size())) ::_exit(3);  // the server is gone
    }
  }
  ::close(fd);
  ::_exit(0);  // no destructors, no atexit handlers: they belong to the server
}

// The workers running now, so that a stopping server can end them at once
// instead of waiting for their calls (issue 74 point 3). A pid leaves the
// set before it is reaped: a reaped pid may be reused by another process.
struct MemoryKill {
  uint64_t total = 0, own = 0, budget = 0;  // bytes when it was killed
};
struct LiveWorkers {
  std::mutex mutex;
  std::set<pid_t> pids;
  bool stopping = false;
  // Workers killed because the tree was past its budget (check_tree_memory).
  std::map<pid_t, MemoryKill> memory_killed;
  std::mutex sampling;  // one receive loop reads the tree at a time
  std::chrono::steady_clock::time_point last_check{};
};
LiveWorkers& live_workers() {
  static LiveWorkers* workers = new LiveWorkers;  // never destroyed: used until _exit
  return *workers;
}

bool server_stopping() {
  LiveWorkers& live = live_workers();
  std::lock_guard<std::mutex> lock(live.mutex);
  return live.stopping;
}

// Forgets a worker that ended; returns why it was killed when the memory
// check killed it.
std::optional<MemoryKill> forget_worker(pid_t pid) {
  LiveWorkers& live = live_workers();
  std::lock_guard<std::mutex> lock(live.mutex);
  live.pids.erase(pid);
  auto it = live.memory_killed.find(pid);
  if (it == live.memory_killed.end()) return std::nullopt;
  MemoryKill kill = it->second;
  live.memory_killed.erase(it);
  return kill;
}

// A number of kB after `key` in a /proc file's text ("Private_Dirty:  12 kB").
uint64_t proc_kb(const std::string& text, std::string_view key) {
  size_t at = text.find(key);
  if (at == std::string::npos) return 0;
  return std::strtoull(text.c_str() + at + key.size(), nullptr, 10);
}

// A small /proc file read whole ("" when it cannot be read: a process gone).
std::string read_proc(const std::string& path) {
  std::string text;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char chunk[4096];
  for (ssize_t n; (n = ::read(fd, chunk, sizeof chunk)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

uint64_t page_bytes() {
  static const uint64_t bytes = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return bytes;
}

// Field `index` of a process's statm, in bytes (0: the address space, 1:
// resident; 0 when the process is gone).
uint64_t statm_bytes(const std::string& statm_path, int index) {
  const std::string statm = read_proc(statm_path);
  const char* p = statm.c_str();
  char* end = nullptr;
  uint64_t pages = 0;
  for (int k = 0; k <= index; ++k, p = end) pages = std::strtoull(p, &end, 10);
  return pages * page_bytes();
}

uint64_t own_statm_bytes(int index) {
  return statm_bytes("/proc/self/statm", index);
}

// A worker's pages of its own: those it allocated, or copied on writing to
// a page it shared with the server (smaps_rollup's Private_*).
uint64_t private_bytes(pid_t pid) {
  const std::string rollup = read_proc(fmt::format("/proc/{}/smaps_rollup", pid));
  return (proc_kb(rollup, "Private_Clean:") + proc_kb(rollup, "Private_Dirty:")) << 10;
}

// A process's resident bytes (0 when it is gone).
uint64_t resident_bytes(pid_t pid) {
  return statm_bytes(fmt::format("/proc/{}/statm", pid), 1);
}

// At least tree_memory().total(), cheaply: each worker's resident set holds
// its private pages (smaps_rollup's Private_* are resident pages), and
// statm is a counter read where smaps_rollup walks every page table of the
// process (10 ms for an x256 insights worker, its mmap lock held: every 50
// ms, a fifth of a core and the worker's own mappings waiting).
// The live workers (read under the registry's lock), those the memory check
// killed left out when `without_killed`.
std::vector<pid_t> live_worker_pids(bool without_killed = false) {
  LiveWorkers& live = live_workers();
  std::lock_guard<std::mutex> lock(live.mutex);
  std::vector<pid_t> pids;
  for (pid_t pid : live.pids)
    if (!without_killed || !live.memory_killed.count(pid)) pids.push_back(pid);
  return pids;
}

uint64_t tree_memory_bound() {
  uint64_t bound = own_statm_bytes(1);
  for (pid_t pid : live_worker_pids()) bound += resident_bytes(pid);
  return bound;
}

// Called from every worker's receive loop while a budget applies: at most
// every kMemoryCheckEveryMs, one of them reads the tree; past the budget it
// kills the workers holding the most memory of their own, largest first,
// until what is left is within it (issue 74 point 8). All of them in one
// check: killing one a check, six workers growing together outgrew the kills
// (a tree 199 MiB past its budget on a loaded host). A worker already killed
// is neither counted nor killed again: its memory goes as it exits.
// The tree's private pages are counted only when its resident sets together
// pass the budget.
void check_tree_memory(uint64_t budget) {
  if (budget == 0) return;
  LiveWorkers& live = live_workers();
  std::unique_lock<std::mutex> sampling(live.sampling, std::try_to_lock);
  if (!sampling.owns_lock()) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - live.last_check < std::chrono::milliseconds(kMemoryCheckEveryMs)) return;
  live.last_check = now;
  if (tree_memory_bound() <= budget) return;
  uint64_t total = own_statm_bytes(1);
  std::vector<std::pair<uint64_t, pid_t>> own;  // (bytes of its own, worker), largest first
  for (pid_t pid : live_worker_pids(/*without_killed=*/true)) {
    own.emplace_back(private_bytes(pid), pid);
    total += own.back().first;
  }
  std::sort(own.begin(), own.end(), std::greater<>());
  const uint64_t tree_total = total;
  std::lock_guard<std::mutex> lock(live.mutex);
  for (const auto& [bytes, pid] : own) {
    if (total <= budget) break;
    if (!live.pids.count(pid)) continue;  // ended meanwhile (not yet reaped: pid still its)
    ::kill(pid, SIGKILL);
    live.memory_killed[pid] = {tree_total, bytes, budget};
    total -= bytes;
  }
}

// In a worker: new mappings may take at most `headroom` bytes past what the
// process maps now (its copy of the server's address space).
void limit_address_space(uint64_t headroom) {
  const uint64_t mapped = own_statm_bytes(0);
  const rlimit limit{mapped + headroom, mapped + headroom};
  ::setrlimit(RLIMIT_AS, &limit);
}

// Reaps a worker that is exiting, on a thread of its own unless it is gone
// already (a thread that cannot be had: here).
void reap_later(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) == pid) return;
  const auto reap = [pid] {
    int ended = 0;
    while (::waitpid(pid, &ended, 0) < 0 && errno == EINTR) {
    }
  };
  try {
    std::thread(reap).detach();
  } catch (const std::system_error&) {
    reap();
  }
}

std::string signal_text(int sig) {
  const char* name = sigabbrev_np(sig);
  return name ? fmt::format("SIG{}", name) : fmt::format("signal {}", sig);
}

// Reads the worker's frames until its end; progress and log frames go on to
// the client as they come.
struct Received {
  std::optional<json> result, error;
  std::optional<int64_t> time_limit_ms;  // the limit the handler declared (kTimeLimit)
  bool killed_at_limit = false;          // killed kTimeLimitGrace past that limit
  std::optional<std::string> malformed;  // it sent a frame that does not decode (then killed)
  bool stuck = false;  // no CPU time, no frame and every thread asleep for worker_stuck_after()
  // Returned at the result (answer_at_result) with the stream still open:
  // the reader, holding any bytes past the frames read.
  std::optional<WorkerFrameReader> open;
};

std::atomic<int64_t> stuck_after_ms{30'000};

// Whether a worker is making progress, read from /proc once a second: the
// CPU time of all its threads, and whether any thread is anything but asleep
// (running, in a disk wait, stopped by a debugger or a signal). A worker
// that has used no CPU for worker_stuck_after() with every thread asleep
// waits on something that never comes: a lock another thread of the server
// held at the fork (the child has no such thread to release it), which a
// worker's computation, all CPU and no waiting, never does otherwise.
class ProgressWatch {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ProgressWatch(pid_t pid) : pid_(pid), last_progress_(Clock::now()) {}

  void saw_progress() { last_progress_ = Clock::now(); }

  bool stuck() {
    const Clock::time_point now = Clock::now();
    if (now < next_sample_) return false;
    next_sample_ = now + std::chrono::seconds(1);
    const std::optional<uint64_t> ticks = cpu_ticks();
    if (!ticks || *ticks != last_ticks_ || any_thread_awake()) {
      if (ticks) last_ticks_ = *ticks;
      last_progress_ = now;
      return false;
    }
    return now - last_progress_ >= std::chrono::milliseconds(stuck_after_ms.load());
  }

 private:
  // utime + stime of the whole process (fields 14 and 15 of its stat, after
  // the command name, which may hold spaces and parentheses).
  std::optional<uint64_t> cpu_ticks() const {
    const std::string stat = read_proc(fmt::format("/proc/{}/stat", pid_));
    const size_t name_end = stat.rfind(')');
    if (name_end == std::string::npos) return std::nullopt;
    const char* p = stat.c_str() + name_end + 1;
    char* end = nullptr;
    uint64_t fields[13] = {};  // fields 3..15; field 3 (the state) is a letter: skipped
    for (int k = 0; k < 13; ++k) {
      while (*p == ' ') ++p;
      if (k == 0) {
        ++p;
        continue;
      }
      fields[k] = std::strtoull(p, &end, 10);
      if (end == p) return std::nullopt;
      p = end;
    }
    return fields[11] + fields[12];
  }

  bool any_thread_awake() const {
    DIR* dir = ::opendir(fmt::format("/proc/{}/task", pid_).c_str());
    if (!dir) return true;  // gone or unreadable: not judged stuck
    bool awake = false;
    while (dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] == '.') continue;
      const std::string stat = read_proc(fmt::format("/proc/{}/task/{}/stat", pid_, entry->d_name));
      const size_t name_end = stat.rfind(')');
      if (name_end == std::string::npos || name_end + 2 >= stat.size()) continue;
      if (stat[name_end + 2] != 'S') awake = true;
    }
    ::closedir(dir);
    return awake;
  }

  pid_t pid_;
  Clock::time_point last_progress_;
  Clock::time_point next_sample_{};
  uint64_t last_ticks_ = ~uint64_t{0};
};

// One wait on a worker's pipe, the tree's memory checked first (the caller
// checks its worker between waits): the bytes read into `chunk`, 0 at the
// stream's end (or a failed read), -1 when nothing came in the wait.
ssize_t read_worker_pipe(int fd, char* chunk, size_t size, uint64_t memory_budget) {
  check_tree_memory(memory_budget);
  pollfd p{fd, POLLIN, 0};
  const int ready = ::poll(&p, 1, memory_budget ? kMemoryCheckEveryMs : 100);
  if (ready == 0 || (ready < 0 && errno == EINTR)) return -1;
  const ssize_t n = ::read(fd, chunk, size);
  if (n < 0 && errno == EINTR) return -1;
  return n < 0 ? 0 : n;
}

// A kKept frame's value put on its trace's entry.
void keep_frame(TraceCache& cache, json& payload) {
  const json& id = payload.at("id");
  FileIdentity identity;
  identity.device = id.at(0).get<uint64_t>();
  identity.inode = id.at(1).get<uint64_t>();
  identity.size = id.at(2).get<uint64_t>();
  identity.mtime_ns = id.at(3).get<int64_t>();
  PhaseTimer t("server/keep_from_worker");
  keep_from_worker(cache, identity, payload.at("key").get<std::string>(),
                   std::move(payload.at("value").get_ref<json::binary_t&>()));
}

// `at_result`: returns once the result has come (the frames that came with
// it read), with the stream left open (Received::open).
Received receive(int fd, pid_t pid, ToolContext& ctx, const std::atomic<bool>* cancelled,
                 uint64_t memory_budget, bool at_result) {
  using Clock = std::chrono::steady_clock;
  Received got;
  std::optional<Clock::time_point> kill_at;
  WorkerFrameReader reader;
  ProgressWatch watch(pid);
  bool killed = false;
  char chunk[1 << 16];
  for (;;) {
    const bool past_limit = kill_at && Clock::now() >= *kill_at;
    if (!killed && ((cancelled && cancelled->load()) || past_limit)) {
      got.killed_at_limit = past_limit;
      ::kill(pid, SIGKILL);
      killed = true;
    }
    if (!killed && watch.stuck()) {
      got.stuck = true;
      ::kill(pid, SIGKILL);
      killed = true;
    }
    const ssize_t n = read_worker_pipe(fd, chunk, sizeof chunk, memory_budget);
    if (n < 0) continue;
    if (n == 0) break;
    for (WorkerFrame& frame : reader.feed(chunk, static_cast<size_t>(n))) {
      json& payload = frame.payload;
      if (frame.kind == Frame::kProgress) {
        ctx.report_progress(payload.at(0).get<double>(), payload.at(1).get<double>(),
                            payload.at(2).get<std::string>());
      } else if (frame.kind == Frame::kTimeLimit) {
        got.time_limit_ms = payload.get<int64_t>();
        kill_at = Clock::now() + std::chrono::milliseconds(*got.time_limit_ms) + kTimeLimitGrace;
      } else if (frame.kind == Frame::kLog) {
        ctx.log(static_cast<LogLevel>(payload.at(0).get<int>()), payload.at(1).get<std::string>());
      } else if (frame.kind == Frame::kWritten) {
        ctx.paths().merge_written_state({payload.at("written").get<std::set<std::string>>(),
                                         payload.at("claimed").get<std::set<std::string>>()});
      } else if (frame.kind == Frame::kKept) {
        keep_frame(ctx.traces().cache(), payload);
      } else if (frame.kind == Frame::kResult) {
        got.result = std::move(payload);
      } else if (frame.kind == Frame::kError) {
        got.error = std::move(payload);
      }
    }
    // Frames count as progress, and so does the time this loop spent on
    // them (a client slow to take a notification holds it in
    // report_progress while the worker waits to write the next).
    watch.saw_progress();
    if (reader.failed()) {
      // Its memory is not what the server forked: nothing more it sends counts.
      got.malformed = *reader.failed();
      ::kill(pid, SIGKILL);
      break;
    }
    if (at_result && got.result && !got.error && !killed) {
      got.open = std::move(reader);
      break;
    }
  }
  return got;
}

// The kept values still being read from workers whose calls were answered,
// per cache, with those workers (abandon_kept_values ends them).
struct PendingKeeps {
  std::mutex mutex;
  std::condition_variable done;
  std::map<const TraceCache*, size_t> readers;  // threads still reading, per cache
  // Their workers not yet reaped: a pid leaves before it is reaped (a
  // reaped pid may be another process's), so abandon_kept_values kills only
  // workers of its own.
  std::map<const TraceCache*, std::set<pid_t>> workers;
};
PendingKeeps& pending_keeps() {
  static PendingKeeps* pending = new PendingKeeps;  // never destroyed: used until _exit
  return *pending;
}

// Reads the rest of an answered worker's stream (its kept values, each put
// on its entry of `cache` as it comes), then reaps it. A worker that stops
// making progress (ProgressWatch) or sends a malformed frame is killed: what
// it kept is lost, and the call that needs it derives it again.
void read_kept_values(int fd, pid_t pid, WorkerFrameReader reader, TraceCache& cache,
                      uint64_t memory_budget) {
  ProgressWatch watch(pid);
  bool killed = false;
  char chunk[1 << 16];
  for (;;) {
    if (!killed && watch.stuck()) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
    const ssize_t n = read_worker_pipe(fd, chunk, sizeof chunk, memory_budget);
    if (n < 0) continue;
    if (n == 0) break;
    for (WorkerFrame& frame : reader.feed(chunk, static_cast<size_t>(n)))
      if (frame.kind == Frame::kKept && !killed) keep_frame(cache, frame.payload);
    watch.saw_progress();
    if (reader.failed()) {
      ::kill(pid, SIGKILL);
      break;
    }
  }
  ::close(fd);
  (void)forget_worker(pid);
  PendingKeeps& pending = pending_keeps();
  {
    std::lock_guard<std::mutex> lock(pending.mutex);
    auto it = pending.workers.find(&cache);
    if (it != pending.workers.end() && it->second.erase(pid) && it->second.empty())
      pending.workers.erase(it);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::lock_guard<std::mutex> lock(pending.mutex);
  if (--pending.readers[&cache] == 0) pending.readers.erase(&cache);
  pending.done.notify_all();
}

// Hands an answered worker's stream to a thread of its own
// (read_kept_values); where no thread can be had, reads it here.
void read_kept_values_later(int fd, pid_t pid, WorkerFrameReader reader, TraceCache& cache,
                            uint64_t memory_budget) {
  {
    PendingKeeps& pending = pending_keeps();
    std::lock_guard<std::mutex> lock(pending.mutex);
    pending.workers[&cache].insert(pid);
    ++pending.readers[&cache];
  }
  auto shared = std::make_shared<WorkerFrameReader>(std::move(reader));
  try {
    std::thread([fd, pid, shared, &cache, memory_budget] {
      read_kept_values(fd, pid, std::move(*shared), cache, memory_budget);
    }).detach();
  } catch (const std::system_error&) {
    read_kept_values(fd, pid, std::move(*shared), cache, memory_budget);
  }
}

}  // namespace

TreeMemory tree_memory() {
  TreeMemory tree;
  tree.server = own_statm_bytes(1);
  for (pid_t pid : live_worker_pids()) {
    const uint64_t own = private_bytes(pid);
    tree.workers += own;
    ++tree.count;
    if (own >= tree.largest_bytes) {
      tree.largest = pid;
      tree.largest_bytes = own;
    }
  }
  return tree;
}

size_t end_all_workers() {
  LiveWorkers& live = live_workers();
  std::lock_guard<std::mutex> lock(live.mutex);
  live.stopping = true;
  for (pid_t pid : live.pids) ::kill(pid, SIGKILL);
  return live.pids.size();
}

namespace {
std::optional<ToolResult> call_in_new_worker(const ToolHandler& handler, const json& args,
                                             ToolContext& ctx, std::string_view tool,
                                             const std::atomic<bool>* cancelled,
                                             uint64_t memory_budget, uint64_t headroom,
                                             bool answer_at_result);
}  // namespace

void set_worker_stuck_after(std::chrono::milliseconds after) {
  stuck_after_ms.store(after.count());
}

bool wait_for_kept_values(const TraceCache& cache, std::chrono::milliseconds at_most) {
  PendingKeeps& pending = pending_keeps();
  std::unique_lock<std::mutex> lock(pending.mutex);
  return pending.done.wait_for(lock, at_most, [&] { return !pending.readers.count(&cache); });
}

void abandon_kept_values(const TraceCache& cache) {
  PendingKeeps& pending = pending_keeps();
  std::unique_lock<std::mutex> lock(pending.mutex);
  if (auto it = pending.workers.find(&cache); it != pending.workers.end())
    for (pid_t pid : it->second) ::kill(pid, SIGKILL);
  pending.done.wait(lock, [&] { return !pending.readers.count(&cache); });
}

ToolResult call_in_worker(const ToolHandler& handler, const json& args, ToolContext& ctx,
                          std::string_view tool, const std::atomic<bool>* cancelled,
                          uint64_t memory_budget, bool answer_at_result) {
  if (server_stopping())
    throw ToolError("the server is stopping: this call was not run", ErrorKind::Cancelled);
  // The budget covers the server and its workers together (issue 74 point 8).
  uint64_t headroom = 0;
  if (memory_budget > 0) {
    const TreeMemory tree = tree_memory();
    if (tree.total() + kWorkerMemoryFloor > memory_budget)
      throw ToolError(
          fmt::format("{} was not started: the server ({} MiB) and its {} running worker "
                      "process(es) ({} MiB of their own) hold {} MiB of the --max-memory budget "
                      "of {} MiB, leaving less than the {} MiB a worker needs; retry when other "
                      "calls end, or start the server with a larger --max-memory",
                      tool, tree.server >> 20, tree.count, tree.workers >> 20, tree.total() >> 20,
                      memory_budget >> 20, kWorkerMemoryFloor >> 20),
          ErrorKind::Unsupported);
    headroom = memory_budget - tree.total();
  }
  // A stuck worker (ProgressWatch) is killed and the call run once more in a
  // new one: the lock it waited on was held at its fork only, by a thread
  // that has since let it go.
  constexpr int kAttempts = 2;
  for (int attempt = 1;; ++attempt) {
    std::optional<ToolResult> result = call_in_new_worker(
        handler, args, ctx, tool, cancelled, memory_budget, headroom, answer_at_result);
    if (result) return std::move(*result);
    const std::string stuck = fmt::format(
        "{}'s worker process made no progress for {} s (no CPU time, every thread "
        "waiting: a lock held at its fork, never released in the child) and was "
        "stopped",
        tool, stuck_after_ms.load() / 1000.0);
    if (attempt == kAttempts)
      throw ToolError(fmt::format("{}, in a second worker too; the server, its sessions and "
                                  "their loaded traces are unaffected. Please report it.",
                                  stuck),
                      ErrorKind::Internal);
    ctx.log(LogLevel::Warning, stuck + "; the call runs again in a new worker");
  }
}

namespace {

// One attempt of call_in_worker: its result, or nothing when the worker was
// stuck (then killed).
std::optional<ToolResult> call_in_new_worker(const ToolHandler& handler, const json& args,
                                             ToolContext& ctx, std::string_view tool,
                                             const std::atomic<bool>* cancelled,
                                             uint64_t memory_budget, uint64_t headroom,
                                             bool answer_at_result) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return handler(args, ctx);
  const pid_t server = ::getpid();
  pid_t pid;
  {
    // The locks a handler takes first, held across fork(), so the child's
    // copies are not in the middle of another thread's change; the child
    // releases its copies on the thread that took them.
    auto store = ctx.traces().hold_for_fork();
    auto cache = ctx.traces().cache().hold_for_fork();
    auto written = ctx.paths().hold_for_fork();
    // Registered under the lock end_all_workers takes, so a stop never
    // misses a worker forked while it runs.
    std::lock_guard<std::mutex> registry(live_workers().mutex);
    pid = ::fork();
    if (pid > 0) live_workers().pids.insert(pid);
    if (pid > 0 && live_workers().stopping) ::kill(pid, SIGKILL);
  }
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return handler(args, ctx);  // no worker to be had: the call still runs
  }
  if (pid == 0) {
    die_with_parent(server);
    if (headroom > 0) limit_address_space(headroom);
    ::close(fds[0]);
    close_inherited_sockets();
    // The server's free memory, which the child shares copy-on-write, handed
    // back to the kernel: an allocation that reuses it then faults in a zero
    // page instead of copying the server's (a copy in a process with a second
    // thread also flushes the TLB of every core it ran on: 10-15 % of an x32
    // insights call).
    {
      PhaseTimer t("worker/malloc_trim");
      ::malloc_trim(0);
    }
    // On a thread of its own: where malloc keeps an arena per thread
    // (JARVIS_MALLOC_TUNING=0, base/malloc_policy.h), glibc gives a new
    // thread a fresh arena, so the call's allocations do not walk (and copy,
    // page by page) the server's free lists, which the child shares
    // copy-on-write. With the one arena jarvis asks for, the trim above is
    // what spares those copies.
    std::thread worker([&] { run_worker(fds[1], handler, args, ctx, tool, headroom); });
    worker.join();
    ::_exit(4);  // not reached: run_worker exits
  }
  ::close(fds[1]);
  std::optional<PhaseTimer> waited(std::in_place, "server/receive");
  Received got = receive(fds[0], pid, ctx, cancelled, memory_budget, answer_at_result);
  if (got.open) {
    // Answered: the rest of its stream (what it keeps) is read beside the answer.
    read_kept_values_later(fds[0], pid, std::move(*got.open), ctx.traces().cache(), memory_budget);
    waited.reset();
    PhaseTimer t("server/result_from_json");
    return result_from_json(*got.result, ctx);
  }
  waited.emplace("server/reap");
  ::close(fds[0]);
  const std::optional<MemoryKill> memory_kill = forget_worker(pid);
  // A worker that sent its whole result and closed its end has only its exit
  // left: its answer stands, and the exit (its address space freed, 7 ms
  // for an x256 insights worker) is waited for beside the answer.
  const bool answered = got.result && !got.malformed && !got.error;
  int status = 0;
  if (answered)
    reap_later(pid);
  else
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  waited.reset();
  if (got.stuck) return std::nullopt;
  if (got.malformed)
    throw ToolError(fmt::format("{} failed in its worker process, which was stopped: {}; the "
                                "server, its sessions and their loaded traces are unaffected",
                                tool, *got.malformed),
                    ErrorKind::Internal);
  if (got.error)
    throw ToolError(got.error->at(0).get<std::string>(),
                    static_cast<ErrorKind>(got.error->at(1).get<int>()));
  if (answered) {
    PhaseTimer t("server/result_from_json");
    return result_from_json(*got.result, ctx);
  }
  if (cancelled && cancelled->load()) throw ToolError("cancelled", ErrorKind::Cancelled);
  if (got.killed_at_limit)
    throw ToolError(
        fmt::format("{} ran past its time limit ({} ms) inside one step that the limit cannot "
                    "interrupt (a SQL function such as trim, replace or LIKE over a long value); "
                    "its worker process was stopped {} ms later. Narrow the query or raise "
                    "timeout_ms.",
                    tool, *got.time_limit_ms, kTimeLimitGrace.count()),
        ErrorKind::Cancelled);
  if (server_stopping())
    throw ToolError("the server is stopping: this call was ended", ErrorKind::Cancelled);
  if (memory_kill)
    throw ToolError(
        fmt::format("{} was stopped: the server and its worker processes held {} MiB, past the "
                    "--max-memory budget of {} MiB, and this call's worker held the most of its "
                    "own ({} MiB); retry when other calls end, narrow the call, or raise "
                    "--max-memory",
                    tool, memory_kill->total >> 20, memory_kill->budget >> 20,
                    memory_kill->own >> 20),
        ErrorKind::Unsupported);
  const std::string how = WIFSIGNALED(status) ? signal_text(WTERMSIG(status))
                                              : fmt::format("exit status {}", WEXITSTATUS(status));
  throw ToolError(
      fmt::format("{} crashed on this input in its worker process ({}): this call failed, the "
                  "server, its sessions and their loaded traces are unaffected. Please report "
                  "it with the trace; other tools on the same trace may still work.",
                  tool, how),
      ErrorKind::Internal);
}

}  // namespace

}  // namespace jarvis::mcp
