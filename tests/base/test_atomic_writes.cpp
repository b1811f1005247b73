// Concurrent writers of the same outputs (issue 18): each writer has its own
// temp file, so 8 threads and 4 MCP sessions writing one path all succeed and
// leave a complete file identical to a single writer's.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <sys/stat.h>

#include "base/atomic_file.h"
#include "base/output_guard.h"
#include "golden.h"
#include "mcp/transport.h"
#include "mcp_harness.h"
#include "report/report.h"
#include "report/xlsx.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::loader_test;
using json = nlohmann::json;

namespace {

// Runs fn(i) on n threads started together; returns the number that threw.
template <typename Fn>
int run_together(int n, Fn fn) {
  std::atomic<int> ready{0}, failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      ++ready;
      while (ready.load() < n) std::this_thread::yield();
      try {
        fn(i);
      } catch (const std::exception& e) {
        MESSAGE(e.what());
        ++failures;
      }
    });
  for (auto& t : threads) t.join();
  return failures.load();
}

std::vector<std::string> leftovers(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos)
      out.push_back(e.path().string());
  return out;
}

}  // namespace

TEST_CASE("the write ledger is bounded: the oldest entries are dropped") {
  TempDir dir;
  EnvGuard env;
  env.set("JARVIS_CACHE_DIR", (dir.path / "cache").string().c_str());
  const fs::path first = dir.path / "first.txt", later = dir.path / "later.txt";
  write_file_atomic(first.string(), "a");
  write_file_atomic(later.string(), "b");
  auto lines = [&] {
    std::ifstream in(dir.path / "cache" / "written-files");
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  };
  REQUIRE(lines().size() == 2);
  // Past 2.5 MiB (20,000 x 2 x 64 bytes) it is rewritten with its newest
  // 20,000 lines: its size drops.
  const fs::path ledger = dir.path / "cache" / "written-files";
  size_t appended = 2;
  bool compacted = false;
  for (uintmax_t size = fs::file_size(ledger); !compacted && appended < 200000; ++appended) {
    record_written(later);
    uintmax_t now = fs::file_size(ledger);
    compacted = now < size;
    size = now;
  }
  REQUIRE(compacted);
  std::vector<std::string> kept = lines();
  CHECK(kept.size() == 20000);
  CHECK(appended > 20000);
  CHECK(kept.back().ends_with(later.string()));
  for (const auto& line : kept) CHECK_FALSE(line.ends_with(first.string()));
}

// The ledger line another process would append for `file` (its identity as
// output_guard takes it: device, inode, size, mtime in ns).
void append_as_another_process(const fs::path& ledger, const fs::path& file) {
  struct stat st;
  REQUIRE(::stat(file.c_str(), &st) == 0);
  std::ofstream out(ledger, std::ios::app);
  out << st.st_dev << ' ' << st.st_ino << ' ' << st.st_size << ' '
      << static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec << ' '
      << file.string() << '\n';
}

// A process keeps what it read of the ledger and its own lines after them,
// and reads the file again only when another process appended: whichever
// came first, this process's line or the other's, the other's file is known.
TEST_CASE("the write ledger: another process's lines are seen beside this one's own") {
  TempDir dir;
  EnvGuard env;
  env.set("JARVIS_CACHE_DIR", (dir.path / "cache").string().c_str());
  const fs::path ledger = dir.path / "cache" / "written-files";
  auto made = [&](const char* name) {
    const fs::path p = dir.path / name;
    std::ofstream(p) << name;
    return p;
  };
  const fs::path mine = dir.path / "mine.txt", user = made("user.txt");
  write_file_atomic(mine.string(), "a");
  CHECK(written_by_jarvis(mine));
  CHECK_FALSE(written_by_jarvis(user));  // the ledger read: this process's line
  // Another process's line, then this one's: the other's is known.
  const fs::path theirs = made("theirs.txt"), mine2 = made("mine2.txt");
  append_as_another_process(ledger, theirs);
  record_written(mine2);
  CHECK(written_by_jarvis(theirs));
  CHECK(written_by_jarvis(mine2));
  // This process's line, then another's: the other's is known too.
  const fs::path mine3 = made("mine3.txt"), theirs2 = made("theirs2.txt");
  record_written(mine3);
  append_as_another_process(ledger, theirs2);
  CHECK(written_by_jarvis(theirs2));
  CHECK_FALSE(written_by_jarvis(user));
  // A file changed since its line was written is not the one recorded.
  std::ofstream(theirs, std::ios::app) << " changed";
  CHECK_FALSE(written_by_jarvis(theirs));
}

TEST_CASE("atomic writes: 8 threads writing one file, 100 rounds, no failure, no torn file") {
  TempDir dir;
  const std::string path = (dir.path / "out" / "table.csv").string();
  // Each thread writes its own content, of different lengths: the file must
  // always be exactly one writer's content.
  std::vector<std::string> contents;
  for (int i = 0; i < 8; ++i) contents.push_back(std::string(1000 + 3000 * i, char('a' + i)));
  for (int round = 0; round < 100; ++round) {
    int failures = run_together(8, [&](int i) { write_file_atomic(path, contents[i]); });
    REQUIRE(failures == 0);
    std::string now = read_file(path);
    CHECK(std::find(contents.begin(), contents.end(), now) != contents.end());
  }
  CHECK(leftovers(dir.path).empty());
}

TEST_CASE("atomic writes: a failed write leaves the old file and no temp") {
  TempDir dir;
  const std::string path = (dir.path / "keep.csv").string();
  write_file_atomic(path, "old");
  fs::create_directories(dir.path / "blocked.csv");  // a directory where the file should go
  CHECK_THROWS(write_file_atomic((dir.path / "blocked.csv").string(), "new"));
  CHECK(read_file(path) == "old");
  CHECK(leftovers(dir.path).empty());
}

TEST_CASE("atomic writes: a set of files in two directories, then one that fails") {
  TempDir dir;
  const std::string a = (dir.path / "x" / "a.csv").string();
  const std::string b = (dir.path / "y" / "b.csv").string();
  const std::string c = (dir.path / "x" / "c.csv").string();
  write_file_atomic(c, "old c");
  write_files_atomic({{a, "alpha"}, {b, std::string(100000, 'b')}, {c, "new c"}});
  CHECK(read_file(a) == "alpha");
  CHECK(read_file(b) == std::string(100000, 'b'));
  CHECK(read_file(c) == "new c");
  CHECK(leftovers(dir.path).empty());

  // The second target is a directory: the overwrite rule's check of every
  // target (base/output_guard.h) refuses the set before anything is
  // written, naming the path; no temp is left.
  fs::create_directories(dir.path / "x" / "blocked.csv");
  const std::string blocked = (dir.path / "x" / "blocked.csv").string();
  try {
    write_files_atomic({{a, "alpha 2"}, {blocked, "new"}, {c, "newer c"}});
    FAIL("no error for a directory in the file's place");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find(blocked) != std::string::npos);
  }
  CHECK(read_file(a) == "alpha");
  CHECK(read_file(c) == "new c");
  CHECK(leftovers(dir.path).empty());
  write_files_atomic({{a, "alpha 2"}, {c, "new c"}});

  // A failure before the renames (the second file's directory cannot be
  // made: a file is in its place) leaves every target as it was.
  write_file_atomic((dir.path / "plain").string(), "a file");
  const std::string unmakeable = (dir.path / "plain" / "z.csv").string();
  CHECK_THROWS_AS(write_files_atomic({{a, "alpha 3"}, {unmakeable, "z"}, {c, "newest c"}}),
                  std::runtime_error);
  CHECK(read_file(a) == "alpha 2");
  CHECK(read_file(c) == "new c");
  CHECK(leftovers(dir.path).empty());
}

TEST_CASE("atomic writes: a set of more files than fsync threads, each with its own content") {
  TempDir dir;
  std::vector<std::pair<std::string, std::string>> files;
  for (int i = 0; i < 21; ++i)
    files.emplace_back((dir.path / (i % 2 ? "odd" : "even") / fmt::format("t{}.csv", i)).string(),
                       std::string(static_cast<size_t>(10 + 997 * i), static_cast<char>('a' + i)));
  write_files_atomic(files);
  for (const auto& [path, data] : files) CHECK(read_file(path) == data);
  CHECK(leftovers(dir.path).empty());
}

TEST_CASE("atomic writes: 8 threads writing the same report and workbook equal one writer") {
  Trace trace = load_trace(golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz");
  CallTree tree(trace);
  Report report = build_report(trace, tree, ReportOptions{});
  TempDir dir;
  write_report_csvs(report, (dir.path / "single").string());
  write_xlsx(report.tables, (dir.path / "single.xlsx").string());

  int failures = run_together(8, [&](int) {
    write_report_csvs(report, (dir.path / "shared").string());
    write_xlsx(report.tables, (dir.path / "shared.xlsx").string());
  });
  CHECK(failures == 0);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir.path / "single")) {
    if (e.path().filename() == jarvis::kReportMarker) continue;  // checked below
    ++files;
    CHECK(read_file(e.path().string()) ==
          read_file((dir.path / "shared" / e.path().filename()).string()));
  }
  CHECK(files == report.tables.size());
  CHECK(read_file((dir.path / "single" / jarvis::kReportMarker).string()) ==
        read_file((dir.path / "shared" / jarvis::kReportMarker).string()));
  CHECK(fs::file_size(dir.path / "shared.xlsx") > 0);
  CHECK(leftovers(dir.path).empty());
}

TEST_CASE("atomic writes: 4 MCP sessions preparing the same category data") {
  TempDir dir;
  const std::string trace = golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz";
  mcp::ServerOptions options;
  options.roots = {golden::shared_dir(), dir.path.string()};
  mcp::Server server(options);
  auto write_tables = [&](const std::string& out) {
    auto session = server.new_session();
    mcp::Emit emit = [](const json&) {};
    auto call = [&](int id, const std::string& method, json params) {
      auto reply = session->handle(
          {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}},
          emit);
      return reply ? *reply : json();
    };
    call(0, "initialize",
         {{"protocolVersion", "2025-11-25"},
          {"capabilities", json::object()},
          {"clientInfo", {{"name", "t"}, {"version", "0"}}}});
    session->handle({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, emit);
    json loaded = call(1, "tools/call", {{"name", "load_trace"}, {"arguments", {{"path", trace}}}});
    if (!loaded.contains("result") || loaded["result"].value("isError", false))
      throw std::runtime_error(loaded.dump().substr(0, 500));
    std::string handle = loaded["result"]["structuredContent"]["trace"];
    json reply = call(
        2, "tools/call",
        {{"name", "category_filter"}, {"arguments", {{"trace", handle}, {"output_dir", out}}}});
    if (!reply.contains("result") || reply["result"].value("isError", false))
      throw std::runtime_error(reply.dump().substr(0, 500));
  };
  write_tables((dir.path / "single").string());
  int failures = run_together(4, [&](int) { write_tables((dir.path / "shared").string()); });
  CHECK(failures == 0);
  size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir.path / "single")) {
    if (!e.is_regular_file()) continue;
    ++files;
    fs::path twin = dir.path / "shared" / fs::relative(e.path(), dir.path / "single");
    // The metadata names its own output directory; otherwise the files are equal.
    std::string expected = read_file(e.path().string());
    const std::string single = (dir.path / "single").string(),
                      shared = (dir.path / "shared").string();
    for (size_t at = expected.find(single); at != std::string::npos;
         at = expected.find(single, at + shared.size()))
      expected.replace(at, single.size(), shared);
    CHECK(expected == read_file(twin.string()));
  }
  CHECK(files > 3);
  CHECK(leftovers(dir.path).empty());
}

namespace {

// One HTTP MCP session: initialize, then JSON-RPC calls on its session id.
struct HttpSession {
  httplib::Client client;
  std::string id;
  explicit HttpSession(int port) : client("127.0.0.1", port) {
    client.set_read_timeout(120);
    json init = {{"jsonrpc", "2.0"},
                 {"id", 0},
                 {"method", "initialize"},
                 {"params",
                  {{"protocolVersion", "2025-11-25"},
                   {"capabilities", json::object()},
                   {"clientInfo", {{"name", "t"}, {"version", "0"}}}}}};
    auto res = client.Post("/mcp", headers(), init.dump(), "application/json");
    if (!res || res->status != 200) throw std::runtime_error("initialize failed");
    id = res->get_header_value("Mcp-Session-Id");
    client.Post("/mcp", headers(),
                json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}.dump(),
                "application/json");
  }
  httplib::Headers headers() const {
    httplib::Headers h = {{"Accept", "application/json, text/event-stream"}};
    if (!id.empty()) h.emplace("Mcp-Session-Id", id);
    return h;
  }
  // The tool's structuredContent; throws on an error.
  json call(int n, const std::string& tool, json args) {
    json body = {{"jsonrpc", "2.0"},
                 {"id", n},
                 {"method", "tools/call"},
                 {"params", {{"name", tool}, {"arguments", std::move(args)}}}};
    auto res = client.Post("/mcp", headers(), body.dump(), "application/json");
    if (!res || res->status != 200) throw std::runtime_error(tool + ": HTTP failure");
    // A JSON body, or an SSE stream whose last data line is the reply.
    std::string text = res->body;
    if (size_t at = text.rfind("data: "); text.rfind('{', 0) != 0 && at != std::string::npos)
      text = text.substr(at + 6, text.find('\n', at) - at - 6);
    json reply = json::parse(text);
    if (!reply.contains("result") || reply["result"].value("isError", false))
      throw std::runtime_error(reply.dump().substr(0, 500));
    return reply["result"]["structuredContent"];
  }
};

}  // namespace

TEST_CASE("atomic writes: 4 HTTP sessions preparing the same category data") {
  TempDir dir;
  const std::string trace = golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz";
  mcp::ServerOptions options;
  options.roots = {golden::shared_dir(), dir.path.string()};
  mcp::Server server(options);
  mcp::HttpServer http(server, mcp::HttpOptions{});
  http.bind();
  std::thread serving([&] { http.run(); });
  auto prepare = [&](const std::string& out) {
    HttpSession s(http.port());
    std::string handle = s.call(1, "load_trace", {{"path", trace}})["trace"];
    s.call(2, "category_filter", {{"trace", handle}, {"output_dir", out}});
  };
  int failures = 0;
  try {
    prepare((dir.path / "single").string());
    failures = run_together(4, [&](int) { prepare((dir.path / "shared").string()); });
  } catch (const std::exception& e) {
    MESSAGE(e.what());
    failures = -1;
  }
  http.stop();
  serving.join();
  CHECK(failures == 0);
  size_t files = 0;
  const std::string single = (dir.path / "single").string(),
                    shared = (dir.path / "shared").string();
  for (const auto& e : fs::recursive_directory_iterator(dir.path / "single")) {
    if (!e.is_regular_file() || e.path().filename().string().starts_with(".jarvis")) continue;
    ++files;
    std::string expected = read_file(e.path().string());
    for (size_t at = expected.find(single); at != std::string::npos;
         at = expected.find(single, at + shared.size()))
      expected.replace(at, single.size(), shared);
    CHECK(expected == read_file((dir.path / "shared" / fs::relative(e.path(), single)).string()));
  }
  CHECK(files > 3);
  CHECK(leftovers(dir.path).empty());
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
