// libFuzzer target for the frames a forked worker sends its server
// (mcp/worker_frames.h). The first input byte seeds how the rest is cut into
// reads (as a pipe hands bytes over in pieces); the rest is the stream.
// Checked: the reader never crashes nor throws; the same bytes in one read or in pieces give the
// same frames and the same end (failed or not, bytes pending); every frame it returns has its
// kind's shape and reads back the same after encoding it again. Seeds: fuzz/corpus_worker_frames
// (real frames of each kind).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "mcp/worker_frames.h"

namespace {

using jarvis::mcp::WorkerFrame;
using jarvis::mcp::WorkerFrameReader;

struct Outcome {
  std::vector<WorkerFrame> frames;
  bool failed = false;
  size_t pending = 0;
};

// The stream read in pieces of the given sizes (cycled), until it fails.
Outcome read_stream(const uint8_t* data, size_t size, const std::vector<size_t>& pieces) {
  Outcome out;
  WorkerFrameReader reader;
  size_t at = 0;
  for (size_t k = 0; at < size; ++k) {
    const size_t n = std::min(pieces[k % pieces.size()], size - at);
    for (WorkerFrame& f : reader.feed(data + at, n)) out.frames.push_back(std::move(f));
    at += n;
    if (reader.failed()) break;
  }
  out.failed = reader.failed().has_value();
  out.pending = reader.pending();
  return out;
}

std::vector<uint8_t> cbor_of(const WorkerFrame& f) {
  return nlohmann::json::to_cbor(f.payload);
}

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_worker_frames: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  uint32_t seed = data[0] * 2654435761u + 1;
  ++data;
  --size;
  std::vector<size_t> pieces;
  for (int k = 0; k < 16; ++k) {
    seed = seed * 1103515245u + 12345u;
    pieces.push_back(1 + (seed >> 16) % 24);
  }
  const Outcome whole = read_stream(data, size, {size == 0 ? 1 : size});
  const Outcome cut = read_stream(data, size, pieces);
  if (whole.failed != cut.failed) finding("one read and many reads end differently");
  if (whole.frames.size() != cut.frames.size()) finding("one read and many reads differ in frames");
  if (whole.pending != cut.pending) finding("one read and many reads leave different bytes");
  std::vector<uint8_t> again;
  for (size_t k = 0; k < whole.frames.size(); ++k) {
    const WorkerFrame& f = whole.frames[k];
    if (f.kind != cut.frames[k].kind || cbor_of(f) != cbor_of(cut.frames[k]))
      finding("one read and many reads decode a frame differently");
    if (!jarvis::mcp::worker_frame_shape_error(f.kind, f.payload).empty())
      finding("a frame was returned without its kind's shape");
    const std::vector<uint8_t> encoded = jarvis::mcp::encode_worker_frame(f.kind, f.payload);
    again.insert(again.end(), encoded.begin(), encoded.end());
  }
  // The frames encoded again read back as the same frames, with nothing left.
  const Outcome round = read_stream(again.data(), again.size(), pieces);
  if (round.failed || round.pending != 0 || round.frames.size() != whole.frames.size())
    finding("re-encoded frames do not read back");
  for (size_t k = 0; k < round.frames.size(); ++k)
    if (round.frames[k].kind != whole.frames[k].kind ||
        cbor_of(round.frames[k]) != cbor_of(whole.frames[k]))
      finding("a re-encoded frame reads back differently");
  return 0;
}
