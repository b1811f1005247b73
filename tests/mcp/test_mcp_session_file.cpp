// examples/session.jsonl piped into `jarvis serve --stdio` (the real binary):
// every request is answered once, with a result, and the ops_summary rows are
// TraceLens's. Requests are sent one at a time (each after the previous
// answer), as a client would, since the server runs requests concurrently.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "golden.h"
#include "mcp/server.h"
#include "report/table.h"

using jarvis::mcp::json;

namespace {

class Child {
 public:
  explicit Child(const std::vector<std::string>& argv) {
    int in[2], out[2];
    REQUIRE(pipe(in) == 0);
    REQUIRE(pipe(out) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      int devnull = open("/dev/null", O_WRONLY);
      dup2(devnull, 2);
      close(in[1]);
      close(out[0]);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  ~Child() {
    if (to_ >= 0) close(to_);
    if (from_ >= 0) close(from_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  void send(const std::string& line) {
    std::string data = line + "\n";
    REQUIRE(write(to_, data.data(), data.size()) == static_cast<ssize_t>(data.size()));
  }
  // Next stdout line, "" on EOF or after `timeout_ms`.
  std::string read_line(int timeout_ms = 20000) {
    while (true) {
      size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      pollfd p{from_, POLLIN, 0};
      if (poll(&p, 1, timeout_ms) <= 0) return "";
      char chunk[65536];
      ssize_t n = read(from_, chunk, sizeof chunk);
      if (n <= 0) return "";
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }
  void close_stdin() {
    close(to_);
    to_ = -1;
  }
  int wait_exit() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buffer_;
};

}  // namespace

TEST_SUITE("mcp_stdio") {
  TEST_CASE("examples/session.jsonl through jarvis serve --stdio") {
    std::ifstream file(std::string(JARVIS_SOURCE_DIR) + "/examples/session.jsonl");
    REQUIRE(file);
    Child child({JARVIS_BINARY, "serve", "--stdio", "--root", jarvis::golden::shared_dir()});
    auto reference =
        jarvis::read_csv_file(jarvis::golden::shared_dir() +
                              "/conformance/h100_bert-small/perf_report_csvs/ops_summary.csv");
    std::string line;
    int requests = 0, progress = 0;
    while (std::getline(file, line)) {
      if (line.empty()) continue;
      json message = json::parse(line);
      child.send(line);
      if (!message.contains("id")) continue;
      ++requests;
      INFO(line);
      json reply;
      while (true) {  // notifications may come first
        std::string out = child.read_line();
        REQUIRE(!out.empty());
        reply = json::parse(out);
        if (reply.contains("id")) break;
        CHECK(reply["method"] == "notifications/progress");
        ++progress;
      }
      CHECK(reply["jsonrpc"] == "2.0");
      CHECK(reply["id"] == message["id"]);
      REQUIRE(reply.contains("result"));
      const json& result = reply["result"];
      if (message["method"] != "tools/call") continue;
      CHECK(result.value("isError", false) == false);
      std::string tool = message["params"]["name"];
      const json& out = result["structuredContent"];
      if (tool == "load_trace") CHECK(out["trace"] == "t1");
      if (tool == "ops_summary" && !message["params"]["arguments"].contains("category")) {
        REQUIRE(out["rows"].size() == 5);
        for (size_t r = 0; r < 5; ++r)
          CHECK(out["rows"][r]["name"].get<std::string>() == reference.at(r, "name").text());
      }
      if (tool == "ops_summary" && message["params"]["arguments"].contains("category"))
        for (const auto& row : out["rows"])
          CHECK(row["categories"].dump().find("GEMM") != std::string::npos);
    }
    CHECK(requests == 8);
    CHECK(progress >= 1);
    child.close_stdin();
    CHECK(child.read_line(5000) == "");  // nothing after the last answer
    CHECK(child.wait_exit() == 0);       // exits on EOF
  }

  TEST_CASE("examples/session.jsonl piped at once runs in order") {
    std::ifstream file(std::string(JARVIS_SOURCE_DIR) + "/examples/session.jsonl");
    REQUIRE(file);
    Child child({JARVIS_BINARY, "serve", "--stdio", "--root", jarvis::golden::shared_dir()});
    std::string line;
    std::set<json> ids;
    while (std::getline(file, line)) {
      if (line.empty()) continue;
      child.send(line);
      json message = json::parse(line);
      if (message.contains("id")) ids.insert(message["id"]);
    }
    child.close_stdin();  // EOF right away: the server must still answer everything
    std::set<json> answered;
    for (std::string out; !(out = child.read_line()).empty();) {
      json reply = json::parse(out);
      if (!reply.contains("id")) continue;
      INFO(out.substr(0, 300));
      CHECK(reply.contains("result"));
      CHECK(reply["result"].value("isError", false) == false);
      CHECK(answered.insert(reply["id"]).second);
    }
    CHECK(answered == ids);
    CHECK(child.wait_exit() == 0);
  }

  TEST_CASE("stdio answers garbage, batches and oversize lines without dying") {
    Child child({JARVIS_BINARY, "serve", "--stdio", "--root", jarvis::golden::shared_dir(),
                 "--max-message-mb", "1"});
    child.send("this is not json");
    json parse = json::parse(child.read_line());
    CHECK(parse["error"]["code"] == jarvis::mcp::rpc::kParseError);
    CHECK_FALSE(parse.contains("id"));
    child.send(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
    CHECK(json::parse(child.read_line())["error"]["code"] == jarvis::mcp::rpc::kInvalidRequest);
    child.send(std::string(2u << 20, 'x'));
    CHECK(json::parse(child.read_line())["error"]["code"] == jarvis::mcp::rpc::kInvalidRequest);
    child.send("{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}\r");
    json pong = json::parse(child.read_line());
    CHECK(pong["id"] == "p");
    CHECK(pong["result"] == json::object());
    child.close_stdin();
    CHECK(child.wait_exit() == 0);
  }
}
