// The trace cache's parse slots (issue 63 point 3): loads of large or slow
// files that hold every regular slot never keep a small file waiting; one
// slot is kept for small files, and large ones never take it.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "session/trace_cache.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace std::chrono_literals;

namespace {

FileIdentity fake_file(uint64_t inode, uint64_t size) {
  FileIdentity id;
  id.device = 1;
  id.inode = inode;
  id.size = size;
  id.path = "/fake/" + std::to_string(inode);
  return id;
}

// A parser whose parses of large files block until released; counts what
// runs at once.
struct GatedParser {
  std::mutex mutex;
  std::condition_variable changed;
  bool released = false;
  int running = 0, most = 0;

  TraceCache::Parser parser() {
    return [this](const FileIdentity& id, const LoadOptions&) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        most = std::max(most, ++running);
        changed.notify_all();
        if (id.size > (64u << 20)) changed.wait(lock, [&] { return released; });
        --running;
      }
      return std::make_shared<const TraceEntry>(id, std::make_shared<const Trace>(), 0.0, 1);
    };
  }
  void wait_running(int n) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait_for(lock, 10s, [&] { return running >= n; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex);
    released = true;
    changed.notify_all();
  }
};

}  // namespace

TEST_CASE("trace cache: a small file parses while large parses hold every regular slot") {
  TraceCache cache(0, /*parallel_loads=*/2);
  GatedParser gate;
  auto parser = gate.parser();
  // Two large files take both regular slots; a third large one waits.
  auto big1 = std::async(std::launch::async,
                         [&] { return cache.acquire(fake_file(1, 1u << 30), {}, parser); });
  auto big2 = std::async(std::launch::async,
                         [&] { return cache.acquire(fake_file(2, 1u << 30), {}, parser); });
  gate.wait_running(2);
  auto big3 = std::async(std::launch::async,
                         [&] { return cache.acquire(fake_file(3, 1u << 30), {}, parser); });
  CHECK(big3.wait_for(300ms) == std::future_status::timeout);
  // A 70 KB file is parsed at once in the slot kept for small files (were
  // it queued, it would wait for the release below: the test would fail,
  // not hang).
  auto small = std::async(std::launch::async,
                          [&] { return cache.acquire(fake_file(4, 70 * 1024), {}, parser); });
  const bool small_done = small.wait_for(5s) == std::future_status::ready;
  CHECK(small_done);
  if (!small_done) gate.release();
  CHECK(small.get().parsed);
  CHECK(big3.wait_for(100ms) == std::future_status::timeout);  // large ones never take it
  gate.release();
  CHECK(big1.get().parsed);
  CHECK(big2.get().parsed);
  CHECK(big3.get().parsed);
  CHECK(gate.most == 3);  // two large + one small at most
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
