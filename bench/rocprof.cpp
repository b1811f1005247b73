// jarvis_bench --rocprof [--repeat N] [--kernel-details] RESULTS.json[.gz]...
//
// TraceLens's rocprof report from a rocprofv3 JSON results file against the
// cost of just reading it, both in this process, best of N:
//   floor  : zlib gunzip of the whole file + a simdjson DOM parse;
//   report : rocprof::load_profile + every report sheet + the CSVs written
//            (what `jarvis report RESULTS --out DIR` does after start-up).
// Prints wall and CPU seconds of each and their ratio report / floor.
#include <simdjson.h>
#include <unistd.h>
#include <zlib.h>

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "base/process_stats.h"
#include "report/table.h"
#include "rocprof/profile.h"
#include "rocprof/report.h"

namespace {

struct Timing {
  double wall_s = 1e30;
  double cpu_s = 1e30;
};

// Best wall and best CPU time of `repeat` runs of `fn`.
Timing best_of(int repeat, const std::function<void()>& fn) {
  Timing best;
  for (int k = 0; k < repeat; ++k) {
    double c0 = jarvis::process_cpu_s();
    auto t0 = std::chrono::steady_clock::now();
    fn();
    best.wall_s = std::min(
        best.wall_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    best.cpu_s = std::min(best.cpu_s, jarvis::process_cpu_s() - c0);
  }
  return best;
}

// gunzip (gzread also reads plain files) + simdjson DOM parse; returns the
// number of kernel dispatches so the work cannot be optimised away.
size_t floor_pass(const std::string& path, size_t& json_bytes) {
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) throw std::runtime_error("cannot open " + path);
  gzbuffer(gz, 1 << 20);
  std::string text;
  std::vector<char> buf(1 << 20);
  int n;
  while ((n = gzread(gz, buf.data(), static_cast<unsigned>(buf.size()))) > 0)
    text.append(buf.data(), static_cast<size_t>(n));
  gzclose(gz);
  json_bytes = text.size();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(text).get(doc)) throw std::runtime_error("not JSON: " + path);
  simdjson::dom::array tools, dispatches;
  if (doc["rocprofiler-sdk-tool"].get_array().get(tools) ||
      tools.at(0)["buffer_records"]["kernel_dispatch"].get_array().get(dispatches))
    throw std::runtime_error("not a rocprofv3 results file: " + path);
  return dispatches.size();
}

void report_pass(const std::string& path, const jarvis::rocprof::ReportOptions& options,
                 const std::filesystem::path& out) {
  auto profile = jarvis::rocprof::load_profile(path);
  for (const auto& t : jarvis::rocprof::report_tables(profile, options))
    jarvis::write_file_atomic((out / (t.name + ".csv")).string(), t.to_csv());
}

}  // namespace

int rocprof_bench(int argc, char** argv) {
  int repeat = 3;
  jarvis::rocprof::ReportOptions options;
  std::vector<std::string> files;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (a == "--repeat" && k + 1 < argc)
      repeat = std::max(1, std::atoi(argv[++k]));
    else if (a == "--kernel-details")
      options.kernel_details = true;
    else
      files.push_back(a);
  }
  if (files.empty()) {
    std::fprintf(stderr,
                 "usage: jarvis_bench --rocprof [--repeat N] [--kernel-details] RESULTS...\n");
    return 2;
  }
  auto out =
      std::filesystem::temp_directory_path() / fmt::format("jarvis_bench_rocprof.{}", getpid());
  std::filesystem::create_directories(out);
  fmt::print(
      "| results file | dispatches | JSON MB | floor wall s (gunzip + DOM) | floor CPU s | "
      "report wall s | report CPU s | wall ratio | CPU ratio |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& f : files) {
    size_t bytes = 0, dispatches = 0;
    Timing floor = best_of(repeat, [&] { dispatches = floor_pass(f, bytes); });
    Timing report = best_of(repeat, [&] { report_pass(f, options, out); });
    fmt::print("| {} | {} | {:.1f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.2f} | {:.2f} |\n",
               std::filesystem::path(f).filename().string(), dispatches, bytes / 1e6, floor.wall_s,
               floor.cpu_s, report.wall_s, report.cpu_s, report.wall_s / floor.wall_s,
               report.cpu_s / floor.cpu_s);
  }
  std::filesystem::remove_all(out);
  return 0;
}
