// libFuzzer target for the trace snapshot reader: each input is the payload
// of a snapshot after its key. The harness puts the header (with the right
// length, CRC-32 and MAC under the fixture cache's key) and the key of a real
// trace in front, so inputs get past the format, staleness and trust checks
// to the tables, and a store the reader
// accepts goes through the call tree and the report, like a JSON trace in
// fuzz_trace. The reader checks a payload's indices before its checksum, so a
// damaged or crafted snapshot must be refused with a reason, never crash.
// Seed: the real snapshot's payload, written by LLVMFuzzerInitialize into the
// first corpus directory given on the command line.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "cache_file_frame.h"
#include "report/report.h"
#include "trace/loader.h"
#include "trace/snapshot.h"
#include "tree/call_tree.h"

namespace {

namespace fs = std::filesystem;

using jarvis::fuzz::kHeaderBytes;
using jarvis::fuzz::kPayloadCrcAt;

struct Fixture {
  fs::path dir;
  std::string trace;     // the trace file the key describes
  std::string snapshot;  // where each input is written as a snapshot
  jarvis::SnapshotKey key;
  jarvis::SnapshotMacKey mac_key{};
  std::string header;  // of the real snapshot
  std::string key_bytes;
  std::string payload_after_key;  // the seed
};

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Fixture make_fixture() {
  Fixture f;
  fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  f.dir = base / ("jarvis_fuzz_snapshot." + std::to_string(::getpid()));
  fs::create_directories(f.dir);
  f.trace = (f.dir / "trace.json").string();
  fs::copy_file(fs::path(JARVIS_SOURCE_DIR) / "fuzz/corpus_trace/bert_h100.json", f.trace,
                fs::copy_options::overwrite_existing);
  jarvis::SnapshotOptions options;
  options.cache_dir = (f.dir / "cache").string();
  options.log = [](std::string_view) {};
  (void)jarvis::load_trace(f.trace, jarvis::LoadOptions{}, options);  // writes the snapshot
  f.key = jarvis::snapshot_key(f.trace);
  std::string problem;
  std::optional<jarvis::SnapshotMacKey> mac_key =
      jarvis::open_snapshot_cache(options.cache_dir, problem);
  if (!mac_key) throw std::runtime_error("no snapshot cache: " + problem);
  f.mac_key = *mac_key;
  std::string real = read_bytes(jarvis::snapshot_path(options.cache_dir, f.key));
  // The key: the canonical path (u64 length + bytes), device, size, mtime,
  // inode (u64 each) and the edge CRC (u32).
  uint64_t path_bytes = 0;
  if (real.size() < kHeaderBytes + sizeof path_bytes) throw std::runtime_error("no snapshot");
  std::memcpy(&path_bytes, real.data() + kHeaderBytes, sizeof path_bytes);
  const size_t key_bytes = 8 + path_bytes + 8 + 8 + 8 + 8 + 4;
  if (real.size() < kHeaderBytes + key_bytes) throw std::runtime_error("short snapshot");
  f.header = real.substr(0, kHeaderBytes);
  f.key_bytes = real.substr(kHeaderBytes, key_bytes);
  f.payload_after_key = real.substr(kHeaderBytes + key_bytes);
  f.snapshot = (f.dir / "input.jsnap").string();
  return f;
}

const Fixture& fixture() {
  static const Fixture f = make_fixture();
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const Fixture& f = fixture();
  // The first corpus directory (a non-flag argument) gets the real payload.
  for (int i = 1; i < *argc; ++i) {
    std::string_view arg = (*argv)[i];
    if (arg.empty() || arg[0] == '-') continue;
    std::error_code ec;
    if (fs::is_directory(arg, ec))
      std::ofstream(fs::path(arg) / "real_payload", std::ios::binary) << f.payload_after_key;
    break;
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Fixture& f = fixture();
  std::string payload = f.key_bytes;
  payload.append(reinterpret_cast<const char*>(data), size);
  std::string file = jarvis::fuzz::framed(f.header, payload, f.mac_key);
  uint32_t crc = 0;
  std::memcpy(&crc, file.data() + kPayloadCrcAt, sizeof crc);
  auto read = [&] {
    std::ofstream(f.snapshot, std::ios::binary | std::ios::trunc) << file;
    return jarvis::read_snapshot(f.snapshot, f.key, f.mac_key, f.trace, [](std::string_view) {});
  };
  // With a wrong checksum the same bytes are read (the indices are checked
  // first) and must always be refused.
  uint32_t wrong_crc = crc ^ 1u;
  std::memcpy(file.data() + kPayloadCrcAt, &wrong_crc, sizeof wrong_crc);
  if (read()) __builtin_trap();
  std::memcpy(file.data() + kPayloadCrcAt, &crc, sizeof crc);
  std::optional<jarvis::Trace> trace = read();
  if (!trace) return 0;  // refused with a reason: the expected outcome for most inputs
  jarvis::CallTree tree(*trace);
  // As in fuzz_trace: refusing an unusable trace with these is an answer.
  try {
    (void)jarvis::build_report(*trace, tree, jarvis::ReportOptions{});
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return 0;
}
