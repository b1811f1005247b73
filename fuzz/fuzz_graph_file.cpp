// libFuzzer target for the step model's graph cache file
// (critical_path/graph_file.h): each input is a file's payload. The harness
// puts a header with the right length, CRC-32 and MAC under the fixture
// cache's key in front (cache_file_frame.h), so inputs get past the trust checks to the graph's
// own checks (what it was made from, its layout, every index, the in-edge
// lists and the topological order). A graph the reader accepts is analysed
// on the recorded and the un-profiled host, as the step model does: a file
// that passed its MAC must be refused with a reason or analysed, never
// crash, hang or read out of bounds. Seed: the real file's payload (the
// graph of fuzz/corpus_trace/bert_h100.json), written by LLVMFuzzerInitialize
// into the first corpus directory given on the command line.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "cache_file_frame.h"
#include "critical_path/critical_path.h"
#include "critical_path/graph_file.h"
#include "trace/cache_file.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {

namespace fs = std::filesystem;
namespace cp = jarvis::critical_path;

using jarvis::fuzz::kHeaderBytes;

struct Fixture {
  fs::path dir;
  std::unique_ptr<jarvis::Trace> trace;
  jarvis::CacheFilePlan plan;
  std::string header;   // of the real file
  std::string payload;  // the seed
};

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Fixture make_fixture() {
  Fixture f;
  fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  f.dir = base / ("jarvis_fuzz_graph_file." + std::to_string(::getpid()));
  fs::create_directories(f.dir);
  const std::string trace = (f.dir / "trace.json").string();
  fs::copy_file(fs::path(JARVIS_SOURCE_DIR) / "fuzz/corpus_trace/bert_h100.json", trace,
                fs::copy_options::overwrite_existing);
  jarvis::SnapshotOptions options;
  options.cache_dir = (f.dir / "cache").string();
  options.log = [](std::string_view) {};
  std::optional<jarvis::CacheFilePlan> plan =
      jarvis::plan_cache_file(trace, cp::kGraphFileExtension, options);
  if (!plan) throw std::runtime_error("no cache file plan (JARVIS_NO_SNAPSHOT set?)");
  f.plan = *plan;
  f.trace = std::make_unique<jarvis::Trace>(jarvis::load_trace(trace));
  const jarvis::CallTree tree(*f.trace);
  cp::write_graph_file(f.plan, *f.trace, cp::build_graph({{f.trace.get(), &tree, -1}}));
  const std::string real = read_bytes(f.plan.file);
  if (real.size() < kHeaderBytes) throw std::runtime_error("no graph file written");
  f.header = real.substr(0, kHeaderBytes);
  f.payload = real.substr(kHeaderBytes);
  return f;
}

const Fixture& fixture() {
  static const Fixture f = make_fixture();
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const Fixture& f = fixture();
  for (int i = 1; i < *argc; ++i) {
    std::string_view arg = (*argv)[i];
    if (arg.empty() || arg[0] == '-') continue;
    std::error_code ec;
    if (fs::is_directory(arg, ec))
      std::ofstream(fs::path(arg) / "real_payload", std::ios::binary) << f.payload;
    break;
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Fixture& f = fixture();
  const std::string payload(reinterpret_cast<const char*>(data), size);
  const std::string file = jarvis::fuzz::framed(f.header, payload, f.plan.mac_key);
  {
    std::ofstream out(f.plan.file, std::ios::binary | std::ios::trunc);
    out << file;
  }
  fs::permissions(f.plan.file, fs::perms::owner_read | fs::perms::owner_write);
  std::optional<cp::Graph> graph = cp::read_graph_file(f.plan, *f.trace);
  if (!graph) return 0;  // refused with a reason: the expected outcome for most inputs
  // As the step model reads it: both analyses (refusing a graph with the
  // engine's own errors is an answer).
  try {
    (void)cp::analyse(*graph);
    (void)cp::analyse_unprofiled(*graph);
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return 0;
}
