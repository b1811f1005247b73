// stdio transport: one JSON-RPC message per line on stdin/stdout.
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "mcp/transport.h"

namespace jarvis::mcp {

namespace {

// Writes whole lines to a descriptor; one message per write under a mutex so
// concurrent replies and notifications never interleave.
class LineWriter {
 public:
  explicit LineWriter(int fd) : fd_(fd) {}
  void write(const json& message) {
    std::string line = message.dump(-1, ' ', false, json::error_handler_t::replace);
    line.push_back('\n');
    std::lock_guard<std::mutex> lock(mutex_);
    if (broken_) return;
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        broken_ = true;  // the client went away; drop further output
        return;
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
  }

 private:
  int fd_;
  std::mutex mutex_;
  bool broken_ = false;
};

// Reads lines of at most `max` bytes; longer lines are consumed and reported
// as oversized instead of being buffered.
class LineReader {
 public:
  LineReader(int fd, size_t max) : fd_(fd), max_(max) {}
  // false at EOF with nothing left.
  bool next(std::string& line, bool& oversized) {
    line.clear();
    oversized = false;
    while (true) {
      if (pos_ == len_) {
        ssize_t n = ::read(fd_, buf_, sizeof buf_);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return !line.empty() || oversized;
        pos_ = 0;
        len_ = static_cast<size_t>(n);
      }
      char* start = buf_ + pos_;
      char* nl = static_cast<char*>(memchr(start, '\n', len_ - pos_));
      size_t take = nl ? static_cast<size_t>(nl - start) : len_ - pos_;
      if (!oversized) {
        if (line.size() + take > max_) {
          oversized = true;
          line.clear();
        } else {
          line.append(start, take);
        }
      }
      pos_ += take;
      if (nl) {
        ++pos_;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return true;
      }
    }
  }

 private:
  int fd_;
  size_t max_;
  char buf_[1 << 16];
  size_t pos_ = 0, len_ = 0;
};

// Runs jobs on `threads` threads. Each job holds the memory bound of its
// message (ParsedMessage::memory_bound) until it finishes, and a job that
// would take the jobs held past `max_held_bytes` is refused (one is always
// taken): a client writing large messages faster than they are served
// cannot have every one parsed and queued. Refusing, not waiting, keeps the
// reader reading, so the responses and cancellations that let the running
// calls finish still arrive.
// After a large message is freed, hand the allocator's free pages back to
// the system: glibc keeps freed heap chunks below its (self-raising) mmap
// threshold resident, so a server that once held a few large messages would
// otherwise keep their footprint for good.
constexpr size_t kLargeMessageBytes = size_t{1} << 20;
void return_freed_memory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

class WorkQueue {
 public:
  WorkQueue(size_t threads, size_t max_held_bytes) : max_held_bytes_(max_held_bytes) {
    for (size_t k = 0; k < threads; ++k) threads_.emplace_back([this] { loop(); });
  }
  ~WorkQueue() { finish(); }
  // Whether a job of `bytes` would be taken now. Only the reader pushes and
  // the workers only release, so a yes holds until the reader's next push.
  bool has_room(size_t bytes) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_bytes_ == 0 || held_bytes_ + bytes <= max_held_bytes_;
  }
  // False (and the job dropped) when it does not fit.
  bool try_push(std::function<void()> job, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (held_bytes_ > 0 && held_bytes_ + bytes > max_held_bytes_) return false;
    held_bytes_ += bytes;
    jobs_.push_back({std::move(job), bytes});
    cv_.notify_one();
    return true;
  }
  size_t held_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_bytes_;
  }
  // Runs the queued jobs to the end, then stops the threads.
  void finish() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closing_ = true;
      cv_.notify_all();
    }
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

 private:
  struct Job {
    std::function<void()> run;
    size_t bytes = 0;
  };
  void loop() {
    while (true) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return closing_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job.run();
      job.run = nullptr;  // frees the message before its bytes are released
      if (job.bytes >= kLargeMessageBytes) return_freed_memory();
      std::lock_guard<std::mutex> lock(mutex_);
      held_bytes_ -= job.bytes;
    }
  }
  size_t max_held_bytes_;
  size_t held_bytes_ = 0;
  std::vector<std::thread> threads_;
  std::deque<Job> jobs_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool closing_ = false;
};

// Requests run on the pool; notifications (cancel!), responses to our
// requests, initialize and ping are handled on the reader thread, in order,
// so they are answered even while a long call runs.
bool runs_on_pool(const json& message) {
  if (message.is_array()) return true;
  return message.is_object() && message.contains("method") && message.contains("id") &&
         message["method"] != "initialize" && message["method"] != "ping";
}

// Requests that read no session state and never hold a thread for long:
// tools/list, prompts/*, resources/list, resources/templates/list and the
// tool_schema tool. They run on a lane of their own, so they are answered
// while every pool thread runs a long call (issue 74: the HTTP server keeps
// threads out of the long calls' reach; over stdio the long calls queue for
// the pool and these pass them). Everything else keeps arrival order on the
// pool (list_traces and unload_trace see the load_trace sent before them).
constexpr std::string_view kQuickLaneMethods[] = {"tools/list", "prompts/list", "prompts/get",
                                                  "resources/list", "resources/templates/list"};

bool quick_lane_method(std::string_view method) {
  return std::find(std::begin(kQuickLaneMethods), std::end(kQuickLaneMethods), method) !=
         std::end(kQuickLaneMethods);
}

bool quick_request(const json& message) {
  if (!message.is_object()) return false;
  const json method = message.value("method", json());
  if (!method.is_string()) return false;
  const std::string& name = method.get_ref<const std::string&>();
  if (quick_lane_method(name)) return true;
  if (name != "tools/call") return false;
  const json params = message.value("params", json());
  return params.is_object() && params.value("name", json()) == "tool_schema";
}

// Session::handle answers every failure of a request itself; this guard is
// for what escapes anyway (bad_alloc while building a reply, a bug), so one
// message can never take the whole server down.
void guarded_handle(Session& session, const json& message, const Emit& emit, LineWriter& writer) {
  json id = message.is_object() && message.contains("id") ? message["id"] : json();
  try {
    if (auto reply = session.handle(message, emit)) writer.write(*reply);
  } catch (const std::exception& e) {
    writer.write(make_error(id, rpc::kInternalError, fmt::format("Internal error: {}", e.what())));
  } catch (...) {
    writer.write(make_error(id, rpc::kInternalError, "Internal error"));
  }
}

}  // namespace

int serve_stdio(Server& server, int in_fd, int out_fd, size_t workers) {
  auto session = server.new_session();
  LineWriter writer(out_fd);
  Emit emit = [&writer](const json& message) { writer.write(message); };
  // Parsed messages waiting or running hold at most twice the message cap,
  // beside the one the reader has in hand.
  const size_t max_held_bytes = 2 * server.options().max_message_bytes;
  WorkQueue pool(std::max<size_t>(1, workers), max_held_bytes);
  // The quick lane: one thread, at most one message cap held.
  WorkQueue quick(1, server.options().max_message_bytes);
  LineReader reader(in_fd, server.options().max_message_bytes);
  std::string line;
  bool oversized = false;
  auto refuse_busy = [&](const json& id) {
    writer.write(make_error(
        id, rpc::kServerBusy,
        fmt::format("Server busy: the requests waiting or running hold {} bytes and this one "
                    "would pass the limit of {}; send it again once they are answered",
                    pool.held_bytes(), max_held_bytes)));
  };
  while (reader.next(line, oversized)) {
    if (oversized) {
      writer.write(make_error(nullptr, rpc::kInvalidRequest,
                              fmt::format("message exceeds the limit of {} bytes",
                                          server.options().max_message_bytes)));
      continue;
    }
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    // A request the pool has no room for is refused from one scan of its
    // text, before a parser builds it: a flood of large requests then costs
    // the line buffer, not a parse each.
    if (line.size() <= server.options().max_message_bytes) {
      JsonTextScan scan = scan_json_text(line, kMaxJsonDepth);
      // A request for a quick lane method is checked against that lane,
      // where it will run (tool_schema's name is not known before the
      // parse: its tools/call is checked against the pool).
      const bool quick_method =
          !scan.root_is_array && scan.method_text && scan.method_text->size() >= 2 &&
          quick_lane_method(scan.method_text->substr(1, scan.method_text->size() - 2));
      WorkQueue& lane = quick_method ? quick : pool;
      if (!scan.too_deep && scanned_runs_on_pool(scan) &&
          !lane.has_room(parsed_memory_bound(line.size(), scan))) {
        refuse_busy(scanned_request_id(scan));
        if (line.size() >= kLargeMessageBytes) {
          line = std::string();
          return_freed_memory();
        }
        continue;
      }
    }
    ParsedMessage parsed = server.parse_message(line);
    const bool large = line.size() >= kLargeMessageBytes;
    line = std::string();  // the parsed message replaces its text
    if (large) return_freed_memory();
    if (parsed.error) {
      writer.write(*parsed.error);
      continue;
    }
    if (runs_on_pool(parsed.message)) {
      json id = parsed.message.is_object() ? parsed.message.value("id", json()) : json();
      WorkQueue& lane = quick_request(parsed.message) ? quick : pool;
      bool queued = lane.try_push([session, message = std::move(parsed.message), &emit,
                                   &writer] { guarded_handle(*session, message, emit, writer); },
                                  parsed.memory_bound);
      if (!queued) refuse_busy(id);
    } else {
      guarded_handle(*session, parsed.message, emit, writer);
    }
  }
  // EOF: let the calls in flight finish (their replies still go out), then exit.
  quick.finish();
  pool.finish();
  return 0;
}

}  // namespace jarvis::mcp
