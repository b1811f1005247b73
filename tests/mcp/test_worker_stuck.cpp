// A worker that waits forever (a lock another thread of the server held at
// its fork, never released in the child) is found by its lack of progress,
// killed, and the call run again in a new worker; stuck twice, the call ends
// with a tool error instead of holding its client (and CI) forever. A worker
// that computes past the same time is left alone.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>

#include <unistd.h>

#include "base/forked_worker.h"
#include "mcp/worker_call.h"
#include "mcp_harness.h"

namespace {
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using jarvis::mcp::json;
using jarvis::mcp::ToolContext;
using jarvis::mcp::ToolHandler;
using jarvis::mcp::testing::analysis_of;
using jarvis::mcp::testing::isolated_options;
using namespace std::chrono_literals;

enum class Mode { Normal, StuckOnce, StuckAlways, BusyLong };
std::atomic<Mode> mode{Mode::Normal};
fs::path marker;  // StuckOnce: the first worker leaves it, the next one sees it

// Blocks the calling thread forever without using the CPU, the way a child
// waits on a mutex whose holder did not come through the fork: a read of a
// pipe whose write end this process itself holds open.
[[noreturn]] void wait_forever() {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  char byte;
  for (;;) (void)::read(fds[0], &byte, 1);
}

struct StallingTool {
  jarvis::mcp::testing::WrappedToolHandler wrapped;
  StallingTool()
      : wrapped("gemm_roofline",
                [](const json& args, ToolContext& ctx, const ToolHandler& original) {
                  if (jarvis::in_forked_worker()) {
                    const Mode m = mode.load();
                    if (m == Mode::StuckAlways) wait_forever();
                    if (m == Mode::StuckOnce && !fs::exists(marker)) {
                      std::ofstream(marker) << "first worker";
                      wait_forever();
                    }
                    if (m == Mode::BusyLong) {
                      // All CPU, no frame: 2.5 stuck_after periods.
                      const auto until = std::chrono::steady_clock::now() + 2500ms;
                      volatile uint64_t spin = 0;
                      while (std::chrono::steady_clock::now() < until) spin = spin + 1;
                    }
                  }
                  return original(args, ctx);
                }) {}
};

struct StuckAfter {
  explicit StuckAfter(std::chrono::milliseconds after) {
    jarvis::mcp::set_worker_stuck_after(after);
  }
  ~StuckAfter() { jarvis::mcp::set_worker_stuck_after(30s); }
};

struct ModeSet {
  explicit ModeSet(Mode m) { mode = m; }
  ~ModeSet() { mode = Mode::Normal; }
};

// A tool whose answer the server keeps for no later call (not one of
// insights, ops_summary, critical_path): every call runs a worker.
json roofline(jarvis::mcp::testing::Harness& h, int id, const std::string& handle) {
  return h.call_tool(id, "gemm_roofline", {{"trace", handle}});
}

bool logged(jarvis::mcp::testing::Harness& h, const std::string& text) {
  std::lock_guard<std::mutex> lock(h.mutex);
  for (const json& note : h.notes)
    if (note.value("method", "") == "notifications/message" &&
        note["params"]["data"].get<std::string>().find(text) != std::string::npos)
      return true;
  return false;
}

TEST_CASE("worker stuck: killed after its quiet time and run again; twice stuck is an error") {
  StallingTool stalling;  // before the server joins its handlers
  StuckAfter after(1000ms);
  const fs::path examples = fs::path(JARVIS_SOURCE_DIR) / "examples";
  jarvis::mcp::testing::Harness h(isolated_options(examples.string()));
  h.initialize();
  h.request(90, "logging/setLevel", {{"level", "warning"}});  // the retry's warning comes
  json loaded = h.call_tool(1, "load_trace", {{"path", "example_trace.json.gz"}});
  REQUIRE_FALSE(loaded["result"].value("isError", false));
  const std::string handle = loaded["result"]["structuredContent"]["trace"].get<std::string>();
  const json expected = analysis_of(roofline(h, 2, handle));

  const fs::path dir =
      fs::temp_directory_path() / ("jarvis_worker_stuck." + std::to_string(::getpid()));
  fs::create_directories(dir);
  marker = dir / "first_worker_was_here";
  {
    ModeSet once(Mode::StuckOnce);
    const auto start = std::chrono::steady_clock::now();
    const json reply = roofline(h, 3, handle);
    const auto took = std::chrono::steady_clock::now() - start;
    REQUIRE_FALSE(reply["result"].value("isError", false));
    CHECK(fs::exists(marker));  // the first worker ran, and stalled
    CHECK(analysis_of(reply) == expected);
    CHECK(took >= 1000ms);  // not before its quiet time
    CHECK(logged(h, "made no progress for 1 s"));
  }
  {
    ModeSet always(Mode::StuckAlways);
    const json reply = roofline(h, 4, handle);
    REQUIRE(reply.contains("result"));  // a tool error, not a protocol fault
    CHECK(reply["result"].value("isError", false));
    const std::string text = reply["result"]["content"][0]["text"].get<std::string>();
    CHECK(text.find("gemm_roofline's worker process made no progress for 1 s") !=
          std::string::npos);
    CHECK(text.find("in a second worker too") != std::string::npos);
    CHECK(reply["result"]["_meta"]["jarvis/errorKind"] == "internal");
  }
  {
    ModeSet busy(Mode::BusyLong);
    const json reply = roofline(h, 5, handle);
    REQUIRE_FALSE(reply["result"].value("isError", false));
    CHECK(analysis_of(reply) == expected);
  }
  // The server answers as before.
  CHECK(analysis_of(roofline(h, 6, handle)) == expected);
  fs::remove_all(dir);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
