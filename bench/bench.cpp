// jarvis_bench: how far `jarvis report` (or `info`) is from the cost of just
// reading the trace.
//
//   jarvis_bench --jarvis BUILD/jarvis [--cmd report|info] [--repeat N] TRACE...
//
// For every trace it times, each in a fresh child process:
//   floor  : zlib gunzip of the whole file (gzread, the same zlib jarvis links)
//            + a full simdjson DOM parse of the text; the JSON size and event
//            count come from this step;
//   jarvis : the built binary, `jarvis report TRACE --out TMP` (or `info`).
// and prints, per trace: wall and CPU seconds (best of N), the ratio
// jarvis/floor, jarvis peak RSS (ru_maxrss) as a fraction of the uncompressed
// JSON size, and microseconds per event. CPU seconds are reported beside wall
// time because a shared machine makes wall time noisy.
#include <fcntl.h>
#include <simdjson.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <functional>
#include <string>
#include <vector>

namespace {

struct Sample {
  double wall_s = 0;
  double cpu_s = 0;  // user + system of the child
  long maxrss_kb = 0;
  int exit_code = -1;
};

double seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6; }

// Runs child() in a forked process (it returns the exit code) and measures it.
Sample measure(const std::function<int()>& child) {
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) _exit(child());
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) < 0) throw std::runtime_error("wait4 failed");
  Sample s;
  s.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s.cpu_s = seconds(ru.ru_utime) + seconds(ru.ru_stime);
  s.maxrss_kb = ru.ru_maxrss;
  s.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return s;
}

Sample best_of(int repeat, const std::function<int()>& child) {
  Sample best;
  for (int k = 0; k < repeat; ++k) {
    Sample s = measure(child);
    if (s.exit_code != 0) return s;
    if (k == 0) {
      best = s;
      continue;
    }
    best.wall_s = std::min(best.wall_s, s.wall_s);
    best.cpu_s = std::min(best.cpu_s, s.cpu_s);
    best.maxrss_kb = std::min(best.maxrss_kb, s.maxrss_kb);
  }
  return best;
}

// What the floor child reports back through a pipe.
struct FloorResult {
  uint64_t json_bytes = 0;
  uint64_t events = 0;
};

int floor_child(const std::string& path, int out_fd) {
  gzFile gz = gzopen(path.c_str(), "rb");  // reads plain files too
  if (!gz) return 3;
  gzbuffer(gz, 1 << 20);
  std::string text;
  std::vector<char> chunk(4 << 20);
  for (;;) {
    int n = gzread(gz, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (n < 0) return 4;
    if (n == 0) break;
    text.append(chunk.data(), static_cast<size_t>(n));
  }
  gzclose(gz);
  simdjson::padded_string padded(text);
  text.clear();
  text.shrink_to_fit();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(padded).get(doc)) return 5;
  simdjson::dom::array events;
  if (doc["traceEvents"].get_array().get(events)) return 6;
  FloorResult r{padded.size(), events.size()};
  if (write(out_fd, &r, sizeof r) != static_cast<ssize_t>(sizeof r)) return 7;
  return 0;
}

int exec_child(const std::vector<std::string>& argv) {
  int devnull = open("/dev/null", O_WRONLY);
  if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  return 127;
}

// Last two path components: "mi300_qwen1.5-0.5b/trace.json.gz".
std::string short_name(const std::string& path) {
  std::filesystem::path p(path);
  return (p.parent_path().filename() / p.filename()).string();
}

struct Options {
  std::string jarvis;
  std::string cmd = "report";
  int repeat = 3;
  std::vector<std::string> traces;
};

Options parse_options(int argc, char** argv) {
  Options o;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (a == "--jarvis" && k + 1 < argc)
      o.jarvis = argv[++k];
    else if (a == "--cmd" && k + 1 < argc)
      o.cmd = argv[++k];
    else if (a == "--repeat" && k + 1 < argc)
      o.repeat = std::max(1, std::atoi(argv[++k]));
    else
      o.traces.push_back(a);
  }
  if (o.jarvis.empty() || o.traces.empty() || (o.cmd != "report" && o.cmd != "info")) {
    std::fprintf(stderr,
                 "usage: jarvis_bench --jarvis PATH [--cmd report|info] [--repeat N] TRACE...\n");
    std::exit(2);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parse_options(argc, argv);
  auto out_dir = std::filesystem::temp_directory_path() / fmt::format("jarvis_bench.{}", getpid());
  fmt::print("| trace | events | JSON MB | floor wall s | floor CPU s | jarvis {} wall s | "
             "jarvis CPU s | wall ratio | CPU ratio | peak RSS MB | RSS / JSON | us/event |\n",
             opt.cmd);
  fmt::print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  int failures = 0;
  for (const std::string& trace : opt.traces) {
    int fds[2];
    if (pipe(fds) != 0) return 1;
    FloorResult fr;
    Sample floor = best_of(opt.repeat, [&] { return floor_child(trace, fds[1]); });
    close(fds[1]);
    // Every successful floor run wrote one result; they are identical.
    while (read(fds[0], &fr, sizeof fr) == static_cast<ssize_t>(sizeof fr)) {
    }
    close(fds[0]);
    if (floor.exit_code != 0 || fr.events == 0) {
      std::fprintf(stderr, "%s: floor run failed (exit %d)\n", trace.c_str(), floor.exit_code);
      ++failures;
      continue;
    }
    std::vector<std::string> cmd = {opt.jarvis, opt.cmd, trace};
    if (opt.cmd == "report") {
      cmd.push_back("--out");
      cmd.push_back(out_dir.string());
    }
    Sample j = best_of(opt.repeat, [&] { return exec_child(cmd); });
    std::filesystem::remove_all(out_dir);
    if (j.exit_code != 0) {
      std::fprintf(stderr, "%s: jarvis %s failed (exit %d)\n", trace.c_str(), opt.cmd.c_str(),
                   j.exit_code);
      ++failures;
      continue;
    }
    double json_mb = static_cast<double>(fr.json_bytes) / 1e6;
    double rss_mb = static_cast<double>(j.maxrss_kb) * 1024 / 1e6;
    fmt::print("| {} | {} | {:.1f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.2f} | {:.2f} | {:.1f} | "
               "{:.2f} | {:.2f} |\n",
               short_name(trace), fr.events, json_mb, floor.wall_s,
               floor.cpu_s, j.wall_s, j.cpu_s, j.wall_s / floor.wall_s, j.cpu_s / floor.cpu_s,
               rss_mb, rss_mb / json_mb, j.wall_s * 1e6 / static_cast<double>(fr.events));
    std::fflush(stdout);
  }
  return failures == 0 ? 0 : 1;
}
