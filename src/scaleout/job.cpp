// The MPI job: start and end, the dynamic work list on rank 0, the serving
// loop of the other ranks, and what a rank says when the job is torn down.
//
// Protocol (point to point, MPI_COMM_WORLD):
//   rank r -> 0, kRequest: pack({counters, task index or "", result})
//   0 -> rank r, kTask:    pack({index, kind, label, payload})
//   0 -> rank r, kEnd:     empty; the rank leaves serve()
// A rank's first request carries no result; every later one carries the
// result of its previous task, so "ask for work" and "here is my result" are
// one message and a rank is never idle while work is left.
//
// Waiting is MPI_Iprobe plus a 1 ms sleep, not a blocking MPI_Recv: Open MPI
// spins in a blocking receive, which would take a core from the analysis.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include <fmt/format.h>

#include "base/process_stats.h"
#include "scaleout/job.h"
#include "scaleout/tasks.h"

namespace jarvis::scaleout {
namespace {

using detail::pack;
using detail::unpack;

constexpr int kRequest = 1, kTask = 2, kEnd = 3;

// What each rank is working on, for the SIGTERM handler (mpirun sends
// SIGTERM to the survivors when a rank dies). Rank 0 fills every slot, a
// serving rank only its own. Pointers into strings that outlive the task.
int g_rank = 0;
int g_size = 0;
std::unique_ptr<std::atomic<const char*>[]> g_current;

void write_all(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

// Async-signal-safe: write(2) and integer formatting by hand only.
void on_terminate(int sig) {
  for (int r = 0; r < g_size; ++r) {
    const char* label = g_current[r].load();
    if (!label) continue;
    char num[16];
    int len = 0;
    int v = r;
    do num[len++] = static_cast<char>('0' + v % 10);
    while ((v /= 10) > 0);
    write_all("jarvis: job stopped while rank ");
    while (len > 0) {
      char c[2] = {num[--len], 0};
      write_all(c);
    }
    write_all(" was analysing ");
    write_all(label);
    write_all("\n");
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// Test hook (tests/scaleout/test_scaleout.cpp): JARVIS_SCALEOUT_TEST_KILL="R:TEXT"
// makes rank R die by SIGKILL, a real process death, when it picks a task
// whose label contains TEXT.
void maybe_die(int rank, const std::string& label) {
  const char* spec = std::getenv("JARVIS_SCALEOUT_TEST_KILL");
  if (!spec) return;
  std::string s = spec;
  size_t colon = s.find(':');
  if (colon == std::string::npos || s.substr(0, colon) != std::to_string(rank)) return;
  if (label.find(s.substr(colon + 1)) != std::string::npos) std::raise(SIGKILL);
}

std::string run_labelled(int rank, const std::string& kind, const std::string& payload,
                         const std::string& label) {
  g_current[rank] = label.c_str();
  maybe_die(rank, label);
  std::string result = detail::run_task(kind, payload);
  g_current[rank] = nullptr;
  return result;
}

void send(int to, int tag, const std::string& data) {
  MPI_Send(data.data(), static_cast<int>(data.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD);
}

std::string receive(int from, int tag, MPI_Status& st) {
  MPI_Probe(from, tag, MPI_COMM_WORLD, &st);
  int count = 0;
  MPI_Get_count(&st, MPI_CHAR, &count);
  std::string data(static_cast<size_t>(count), '\0');
  MPI_Recv(data.data(), count, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  return data;
}

// Polls for a message (see the file comment); false when none came in time
// for the caller to do something else.
bool poll(int from, int tag, MPI_Status& st) {
  int flag = 0;
  MPI_Iprobe(from, tag, MPI_COMM_WORLD, &flag, &st);
  if (!flag) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return flag != 0;
}

std::string counters_field() {
  const detail::Counters& c = detail::counters();
  return fmt::format("{} {} {} {} {}", c.tasks.load(), c.runs_parsed.load(), c.cache_hits.load(),
                     c.failed.load(), peak_rss_mb());
}

RankStats parse_counters(int rank, const std::string& field) {
  RankStats s;
  s.rank = rank;
  if (std::sscanf(field.c_str(), "%zu %zu %zu %zu %lf", &s.tasks, &s.runs_parsed, &s.cache_hits,
                  &s.failed, &s.peak_rss_mb) != 5)
    throw std::runtime_error(fmt::format("malformed counters from rank {}", rank));
  return s;
}

}  // namespace

Job::Job() {
  int provided = 0;
  // Only the main thread calls MPI; rank 0 analyses on a second thread.
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  idle_.assign(static_cast<size_t>(size_), false);
  remote_stats_.resize(static_cast<size_t>(size_));
  g_rank = rank_;
  g_size = size_;
  g_current = std::make_unique<std::atomic<const char*>[]>(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) g_current[r] = nullptr;
  std::signal(SIGTERM, on_terminate);
}

Job::~Job() {
  try {
    if (root()) end_serving_ranks();
  } catch (...) {
    MPI_Abort(MPI_COMM_WORLD, 1);  // cannot release them: end the job rather than hang it
  }
  std::signal(SIGTERM, SIG_DFL);
  MPI_Finalize();
}

std::vector<std::string> Job::run_tasks(const std::vector<Task>& tasks,
                                        const std::function<void(size_t, size_t)>& progress) {
  const size_t n = tasks.size();
  std::vector<size_t> order(n);
  for (size_t k = 0; k < n; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return tasks[a].weight > tasks[b].weight; });
  std::vector<std::string> results(n);
  std::mutex mutex;
  size_t next = 0;
  auto take = [&]() -> std::optional<size_t> {
    std::lock_guard lock(mutex);
    if (next == n) return std::nullopt;
    return order[next++];
  };
  std::atomic<size_t> done{0};
  auto give = [&](int r, size_t k) {
    g_current[r] = tasks[k].label.c_str();
    send(r, kTask, pack({std::to_string(k), tasks[k].kind, tasks[k].label, tasks[k].payload}));
    idle_[r] = false;
  };
  // Rank 0 analyses too, on its own thread (no MPI calls there).
  std::thread local([&] {
    while (auto k = take()) {
      results[*k] = run_labelled(0, tasks[*k].kind, tasks[*k].payload, tasks[*k].label);
      ++done;
    }
  });
  struct Join {
    std::thread& t;
    ~Join() { t.join(); }
  } join{local};
  for (int r = 1; r < size_; ++r)
    if (idle_[r])
      if (auto k = take()) give(r, *k);
  size_t reported = 0;
  MPI_Status st;
  while (done < n) {
    if (poll(MPI_ANY_SOURCE, kRequest, st)) {
      int r = st.MPI_SOURCE;
      auto f = unpack(receive(r, kRequest, st));
      if (f.size() != 3) throw std::runtime_error(fmt::format("malformed request from rank {}", r));
      remote_stats_[r] = parse_counters(r, f[0]);
      g_current[r] = nullptr;
      if (!f[1].empty()) {
        results[std::stoul(f[1])] = std::move(f[2]);
        ++done;
      }
      if (auto k = take())
        give(r, *k);
      else
        idle_[r] = true;
    }
    for (size_t d = done; reported < d;)
      if (progress) progress(++reported, n);
  }
  return results;
}

void Job::serve() {
  std::string index, result;
  MPI_Status st;
  for (;;) {
    send(0, kRequest, pack({counters_field(), index, result}));
    while (!poll(0, MPI_ANY_TAG, st)) {
    }
    std::string msg = receive(0, st.MPI_TAG, st);
    if (st.MPI_TAG == kEnd) return;
    auto f = unpack(msg);
    if (f.size() != 4) throw std::runtime_error("malformed task from rank 0");
    index = f[0];
    result = run_labelled(rank_, f[1], f[3], f[2]);
  }
}

std::vector<RankStats> Job::stats() {
  MPI_Status st;
  // A rank that has not asked for work yet has not reported: wait for it.
  for (int r = 1; r < size_; ++r)
    if (!idle_[r]) {
      auto f = unpack(receive(r, kRequest, st));
      if (f.size() != 3 || !f[1].empty())
        throw std::runtime_error(fmt::format("unexpected request from rank {}", r));
      remote_stats_[r] = parse_counters(r, f[0]);
      idle_[r] = true;
    }
  std::vector<RankStats> out = remote_stats_;
  out[0] = parse_counters(0, counters_field());
  return out;
}

void Job::end_serving_ranks() {
  stats();  // every rank idle, its request received
  for (int r = 1; r < size_; ++r) send(r, kEnd, "");
}

}  // namespace jarvis::scaleout

// The module's entry point: join_job (ranks.cpp) finds it with dlsym. The
// caller owns the result.
extern "C" jarvis::scaleout::JobApi* jarvis_mpi_job() {
  return new jarvis::scaleout::Job();
}
static_assert(std::is_same_v<decltype(&jarvis_mpi_job), jarvis::scaleout::MpiModuleEntry>);
