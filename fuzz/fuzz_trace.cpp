// libFuzzer target for the trace readers through the whole single-trace
// pipeline: each input is a Kineto JSON document; if it loads, the call tree,
// the TraceLens-equivalent report, the collective summary and `prepare`
// (category data, metadata, tree data) run on it. Any crash, sanitizer report
// or exception other than the engine's documented errors is a finding.
// Seeds: tests/malformed/*.json, fuzz/corpus_trace (small real-trace slices).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include "categories/prepare_trace.h"
#include "collectives/collectives.h"
#include "report/report.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {

// prepare writes files: into a RAM-backed directory so fsync costs nothing.
const std::string& output_dir() {
  static const std::string dir = [] {
    std::filesystem::path base =
        std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    auto path = base / ("jarvis_fuzz_trace." + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
    return path.string();
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  jarvis::Trace trace;
  try {
    trace = jarvis::load_trace_from_json(input, "fuzz");
  } catch (const jarvis::TraceError&) {
    return 0;  // refused with a message: the expected outcome for most inputs
  }
  jarvis::CallTree tree(trace);
  // The report and prepare refuse unusable traces ("No GPU events found in
  // the trace", ...) with std::runtime_error / std::invalid_argument: an
  // expected answer. Any other exception (nlohmann, std::logic_error such as
  // out_of_range) escapes and is a finding, as are crashes and sanitizer reports.
  try {
    jarvis::Report report = jarvis::build_report(trace, tree, jarvis::ReportOptions{});
    (void)jarvis::collectives::summarize_trace(trace, tree);
    jarvis::analysis::TracePrepareOptions options;
    options.platform = "MI300X";
    options.output_dir = output_dir();
    (void)jarvis::analysis::prepare_from_trace(trace, options);
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return 0;
}
