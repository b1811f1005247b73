// jarvis_bench: how far `jarvis report` (or `info`) is from the cost of just
// reading the trace.
//
//   jarvis_bench --jarvis BUILD/jarvis [--cmd report|info] [--repeat N] TRACE...
//   jarvis_bench --rocprof [--repeat N] [--kernel-details] RESULTS...  (bench/rocprof.cpp)
//   jarvis_bench --deep-stack [DEPTH...]  fusion candidates on deep stacks (bench/deep_stack.cpp)
//   jarvis_bench --load-modes [--repeat N] TRACE...  gzip inflate modes (bench/load_modes.cpp)
//   jarvis_bench --in-process [--repeat N] TRACE...  JSON vs snapshot load in one process
//                                                   (bench/in_process.cpp)
//
// For every trace it times, each in a fresh child process:
//   floor  : zlib gunzip of the whole file (gzread, the same zlib jarvis links)
//            + a full simdjson DOM parse of the text; the JSON size and event
//            count come from this step; beside it, in the floor details,
//            ISA-L's inflate of the file alone (jarvis's inflater: the part of
//            any load here that no parse can save);
//   cold   : the built binary, `jarvis report TRACE --out TMP` (or `info`),
//            with trace snapshots off (JARVIS_NO_SNAPSHOT=1);
//   snapshot : the same command again once one run has written the trace's
//            snapshot into a private cache (JARVIS_CACHE_DIR).
// and prints, per trace: wall and CPU seconds (best of N), the ratios
// cold/floor and snapshot/cold, the cold run's peak RSS (ru_maxrss) as a
// fraction of the uncompressed JSON size, and microseconds per event; above
// the table the date, the machine, its load average and what a fresh page
// costs on it. CPU seconds are
// reported beside wall time because a shared machine makes wall time noisy.
#include <fcntl.h>
#include <simdjson.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/file_ptr.h"
#include "trace/byte_source.h"

namespace {

struct Sample {
  double wall_s = 0;
  double cpu_s = 0;  // user + system of the child
  long maxrss_kb = 0;
  int exit_code = -1;
};

double seconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6;
}

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
  double gunzip_s = 0;  // wall time of the decompression step alone
  double parse_s = 0;   // wall time of the simdjson DOM parse alone
};

// Uncompressed size from the gzip trailer (last member only, mod 2^32); the
// file's size for a plain (not gzip) file, whose last bytes are JSON text.
uint64_t json_size_hint(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return 0;
  unsigned char head[2] = {0, 0};
  unsigned char t[4] = {0, 0, 0, 0};
  uint64_t hint = 0;
  bool gzip = std::fread(head, 1, 2, f) == 2 && head[0] == 0x1f && head[1] == 0x8b;
  if (std::fseek(f, gzip ? -4 : 0, SEEK_END) == 0) {
    if (!gzip)
      hint = static_cast<uint64_t>(std::max<long>(std::ftell(f), 0));
    else if (std::fread(t, 1, 4, f) == 4)
      hint = t[0] | (t[1] << 8) | (t[2] << 16) | (static_cast<uint64_t>(t[3]) << 24);
  }
  std::fclose(f);
  return hint;
}

// A text buffer that is not zero-filled first: the floor writes each byte
// once, as a real gunzip into fresh memory does (a std::vector<char> would
// touch every page an extra time before gzread fills it).
struct TextBuffer {
  std::unique_ptr<char[]> data;
  size_t capacity = 0;  // bytes for text, simdjson's padding after them
  void grow_to(size_t cap, size_t len) {
    auto bigger = std::make_unique_for_overwrite<char[]>(cap + simdjson::SIMDJSON_PADDING);
    if (len > 0) std::memcpy(bigger.get(), data.get(), len);
    data = std::move(bigger);
    capacity = cap;
  }
};

// The floor: decompress straight into one padded buffer sized from the gzip
// trailer (no copies), then one simdjson DOM parse of the whole text.
// Full DOM parse (validates and materialises every value). Returns the
// number of events, 0 on error.
uint64_t parse_dom(const char* text, size_t len) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(text, len, false).get(doc)) return 0;
  simdjson::dom::array events;
  if (doc["traceEvents"].get_array().get(events)) return 0;
  return events.size();
}

// On-demand scan: visits every event and every member key of it, skipping
// the values (what the cheapest possible reader must do at least).
uint64_t scan_on_demand(const char* text, size_t len, size_t capacity) {
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (parser.iterate(text, len, capacity).get(doc)) return 0;
  simdjson::ondemand::array events;
  if (doc["traceEvents"].get_array().get(events)) return 0;
  uint64_t count = 0;
  for (auto ev : events) {
    simdjson::ondemand::object obj;
    if (ev.get_object().get(obj)) return 0;
    for (auto field : obj) {
      std::string_view key;
      if (field.unescaped_key().get(key)) return 0;
    }
    ++count;
  }
  return count;
}

int floor_child(const std::string& path, bool on_demand, int out_fd) {
  auto t0 = std::chrono::steady_clock::now();
  gzFile gz = gzopen(path.c_str(), "rb");  // reads plain files too
  if (!gz) return 3;
  gzbuffer(gz, 1 << 20);
  TextBuffer text;
  text.grow_to(std::max<uint64_t>(json_size_hint(path), 1 << 20) + 1, 0);
  size_t len = 0;
  for (;;) {
    if (len == text.capacity)  // the hint was short (multi-member gzip): grow
      text.grow_to(2 * text.capacity, len);
    int n = gzread(gz, text.data.get() + len,
                   static_cast<unsigned>(std::min<size_t>(text.capacity - len, 1u << 30)));
    if (n < 0) return 4;
    if (n == 0) break;
    len += static_cast<size_t>(n);
  }
  gzclose(gz);
  std::memset(text.data.get() + len, 0, simdjson::SIMDJSON_PADDING);
  auto t1 = std::chrono::steady_clock::now();
  uint64_t count = on_demand
                       ? scan_on_demand(text.data.get(), len, len + simdjson::SIMDJSON_PADDING)
                       : parse_dom(text.data.get(), len);
  auto t2 = std::chrono::steady_clock::now();
  if (count == 0) return 5;
  FloorResult r{len, count, std::chrono::duration<double>(t1 - t0).count(),
                std::chrono::duration<double>(t2 - t1).count()};
  if (write(out_fd, &r, sizeof r) != static_cast<ssize_t>(sizeof r)) return 7;
  return 0;
}

// The least any load of the file here spends inflating it: the loader's own
// ISA-L source (trace/byte_source.h: every member, CRC and length checked)
// read to the end into one reused 1 MiB buffer, nothing kept or parsed.
// Writes the wall seconds to out_fd; the compressed file is read through the
// page cache inside the clock, as in a load.
int isal_inflate_child(const std::string& path, int out_fd) {
  jarvis::FilePtr file(std::fopen(path.c_str(), "rb"));
  if (!file) return 3;
  unsigned char magic[2] = {0, 0};
  if (std::fread(magic, 1, 2, file.get()) != 2 || magic[0] != 0x1f || magic[1] != 0x8b)
    return 4;  // not gzip
  std::rewind(file.get());
  std::vector<char> out(1 << 20);
  auto t0 = std::chrono::steady_clock::now();
  try {
    auto source = jarvis::isal_gzip_source(std::move(file), path);
    while (source->read(out.data(), out.size()) > 0) {
    }
  } catch (const std::exception&) {
    return 5;
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (write(out_fd, &s, sizeof s) != static_cast<ssize_t>(sizeof s)) return 7;
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

// Microseconds to fault in and zero one fresh 4 KiB page (the first write to
// a new anonymous mapping, less a second write to the same bytes), median of
// five 64 MiB rounds. Virtual machines differ here by 5x and more, and the
// floor (gunzip into one fresh buffer) pays it for every page of the JSON,
// so the ratios of two machines compare only beside this number.
double fresh_page_us() {
  constexpr size_t kBytes = size_t{64} << 20;
  std::vector<double> rounds;
  for (int round = 0; round < 5; ++round) {
    void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 0;
    auto t0 = std::chrono::steady_clock::now();
    std::memset(p, 1, kBytes);
    auto t1 = std::chrono::steady_clock::now();
    std::memset(p, 2, kBytes);
    auto t2 = std::chrono::steady_clock::now();
    munmap(p, kBytes);
    double fault = std::chrono::duration<double>((t1 - t0) - (t2 - t1)).count();
    rounds.push_back(fault * 1e6 / static_cast<double>(kBytes / 4096));
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

// How malloc maps memory for the floor and the jarvis runs (they inherit the
// environment): glibc reads GLIBC_TUNABLES before main, and with
// glibc.malloc.hugetlb=1 it asks for transparent 2 MiB pages, so the floor's
// one big buffer takes a fault per 2 MiB instead of per 4 KiB (bench/run.sh's
// second pass, the floor of a host where faults are cheap).
std::string malloc_pages() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::strstr(tunables, "glibc.malloc.hugetlb=1"))
    return "2 MiB pages (glibc.malloc.hugetlb=1)";
  return "4 KiB pages (glibc default)";
}

// "2026-11-23 20:30 UTC, 2 x Intel(R) Xeon(R) ..., load average 1.2 0.9 0.7,
// fresh 4 KiB page 3.1 us, malloc 4 KiB pages (glibc default)".
std::string machine_line() {
  std::string model = "unknown CPU";
  if (FILE* f = std::fopen("/proc/cpuinfo", "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, f))
      if (std::strncmp(line, "model name", 10) == 0) {
        const char* colon = std::strchr(line, ':');
        if (colon) model = std::string(colon + 2, std::strcspn(colon + 2, "\n"));
        break;
      }
    std::fclose(f);
  }
  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return fmt::format(
      "{}, {} x {}, load average {:.2f} {:.2f} {:.2f}, fresh 4 KiB page {:.1f} us, malloc {}", date,
      sysconf(_SC_NPROCESSORS_ONLN), model, load[0], load[1], load[2], fresh_page_us(),
      malloc_pages());
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

struct Floor {
  Sample sample;
  FloorResult result;
  bool ok() const { return sample.exit_code == 0 && result.events > 0; }
};

Floor run_floor(const std::string& trace, bool on_demand, int repeat) {
  Floor f;
  int fds[2];
  if (pipe(fds) != 0) return f;
  f.sample = best_of(repeat, [&] { return floor_child(trace, on_demand, fds[1]); });
  close(fds[1]);
  // Every successful run wrote its result; keep the fastest phases.
  FloorResult one;
  for (int k = 0; read(fds[0], &one, sizeof one) == static_cast<ssize_t>(sizeof one); ++k) {
    if (k > 0) {
      one.gunzip_s = std::min(one.gunzip_s, f.result.gunzip_s);
      one.parse_s = std::min(one.parse_s, f.result.parse_s);
    }
    f.result = one;
  }
  close(fds[0]);
  return f;
}

// Best of `repeat` ISA-L inflate times of the file (isal_inflate_child); a
// negative value when the file is not gzip or the inflate failed.
double run_isal_inflate(const std::string& trace, int repeat) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  Sample s = best_of(repeat, [&] { return isal_inflate_child(trace, fds[1]); });
  close(fds[1]);
  double best = -1;
  for (double one; read(fds[0], &one, sizeof one) == static_cast<ssize_t>(sizeof one);)
    best = best < 0 ? one : std::min(best, one);
  close(fds[0]);
  return s.exit_code == 0 ? best : -1;
}

std::string seconds_or_dash(double s) {
  return s < 0 ? std::string("-") : fmt::format("{:.3f}", s);
}

}  // namespace

int rocprof_bench(int argc, char** argv);     // bench/rocprof.cpp
int deep_stack_bench(int argc, char** argv);  // bench/deep_stack.cpp
int load_modes_bench(int argc, char** argv);  // bench/load_modes.cpp
int in_process_bench(int argc, char** argv);  // bench/in_process.cpp

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--rocprof") return rocprof_bench(argc - 1, argv + 1);
  if (argc > 1 && std::string(argv[1]) == "--deep-stack")
    return deep_stack_bench(argc - 1, argv + 1);
  if (argc > 1 && std::string(argv[1]) == "--load-modes")
    return load_modes_bench(argc - 1, argv + 1);
  if (argc > 1 && std::string(argv[1]) == "--in-process")
    return in_process_bench(argc - 1, argv + 1);
  Options opt = parse_options(argc, argv);
  auto out_dir = std::filesystem::temp_directory_path() / fmt::format("jarvis_bench.{}", getpid());
  auto cache_dir =
      std::filesystem::temp_directory_path() / fmt::format("jarvis_bench_cache.{}", getpid());
  // One cache directory for every child from the start: it also holds the
  // record of the files jarvis wrote, so a run under another one would see
  // the previous run's report as a stranger's file and refuse it. A directory
  // left by an earlier bench of the same pid goes first.
  std::filesystem::remove_all(out_dir);
  std::filesystem::remove_all(cache_dir);
  ::setenv("JARVIS_CACHE_DIR", cache_dir.c_str(), 1);
  fmt::print("jarvis_bench, `jarvis {}`, best of {}: {}\n\n", opt.cmd, opt.repeat, machine_line());
  fmt::print(
      "| trace | events | JSON MB | floor wall s (gunzip + parse) | floor CPU s | "
      "cold wall s | cold CPU s | cold / floor wall | cold / floor CPU | snapshot wall s | "
      "snapshot CPU s | snapshot / cold wall | snapshot / cold CPU | peak RSS MB (cold) | "
      "RSS / JSON | us/event cold (wall) | us/event cold (CPU) |\n");
  fmt::print(
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  int failures = 0;
  std::vector<std::string> floor_lines;
  for (const std::string& trace : opt.traces) {
    Floor dom = run_floor(trace, false, opt.repeat);
    Floor od = run_floor(trace, true, opt.repeat);
    if (!dom.ok() || !od.ok() || dom.result.events != od.result.events) {
      std::fprintf(stderr, "%s: floor run failed (exit %d / %d)\n", trace.c_str(),
                   dom.sample.exit_code, od.sample.exit_code);
      ++failures;
      continue;
    }
    // The floor is whichever plain simdjson pass was faster.
    const Floor& best = od.sample.wall_s < dom.sample.wall_s ? od : dom;
    const Sample& floor = best.sample;
    const FloorResult& fr = best.result;
    floor_lines.push_back(
        fmt::format("| {} | {:.3f} | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} |", short_name(trace),
                    dom.result.gunzip_s, seconds_or_dash(run_isal_inflate(trace, opt.repeat)),
                    dom.result.parse_s, od.result.parse_s, dom.sample.cpu_s, od.sample.cpu_s));
    std::vector<std::string> cmd = {opt.jarvis, opt.cmd, trace};
    if (opt.cmd == "report") {
      cmd.push_back("--out");
      cmd.push_back(out_dir.string());
    }
    // Children inherit the environment: cold runs without snapshots, then one
    // run that writes the snapshot, then the runs that read it.
    ::setenv("JARVIS_NO_SNAPSHOT", "1", 1);
    Sample j = best_of(opt.repeat, [&] { return exec_child(cmd); });
    ::setenv("JARVIS_NO_SNAPSHOT", "0", 1);
    Sample primed = measure([&] { return exec_child(cmd); });
    Sample snap = best_of(opt.repeat, [&] { return exec_child(cmd); });
    std::filesystem::remove_all(out_dir);
    std::filesystem::remove_all(cache_dir);
    if (j.exit_code != 0 || primed.exit_code != 0 || snap.exit_code != 0) {
      std::fprintf(stderr, "%s: jarvis %s failed (exit %d / %d / %d)\n", trace.c_str(),
                   opt.cmd.c_str(), j.exit_code, primed.exit_code, snap.exit_code);
      ++failures;
      continue;
    }
    double json_mb = static_cast<double>(fr.json_bytes) / 1e6;
    double rss_mb = static_cast<double>(j.maxrss_kb) * 1024 / 1e6;
    double events = static_cast<double>(fr.events);
    fmt::print(
        "| {} | {} | {:.1f} | {:.3f} ({:.3f} + {:.3f}) | {:.3f} | {:.3f} | {:.3f} | {:.2f} | "
        "{:.2f} | {:.3f} | {:.3f} | {:.2f} | {:.2f} | {:.1f} | {:.2f} | {:.2f} | {:.2f} |\n",
        short_name(trace), fr.events, json_mb, floor.wall_s, fr.gunzip_s, fr.parse_s, floor.cpu_s,
        j.wall_s, j.cpu_s, j.wall_s / floor.wall_s, j.cpu_s / floor.cpu_s, snap.wall_s, snap.cpu_s,
        snap.wall_s / j.wall_s, snap.cpu_s / j.cpu_s, rss_mb, rss_mb / json_mb,
        j.wall_s * 1e6 / events, j.cpu_s * 1e6 / events);
    std::fflush(stdout);
  }
  fmt::print(
      "\nFloor details (best of {}): gunzip = zlib gzread into one buffer; ISA-L inflate = "
      "the inflater jarvis uses, alone, into one reused 1 MiB buffer (the least a load "
      "here spends inflating; - for a plain file); DOM = simdjson dom::parser::parse; "
      "on-demand = simdjson ondemand pass over every event and member key.\n\n",
      opt.repeat);
  fmt::print(
      "| trace | gunzip wall s | ISA-L inflate wall s | DOM parse wall s | on-demand scan wall s | "
      "gunzip+DOM CPU s | gunzip+on-demand CPU s |\n|---|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& line : floor_lines) fmt::print("{}\n", line);
  return failures == 0 ? 0 : 1;
}
