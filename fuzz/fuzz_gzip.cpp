// Differential libFuzzer target for the gzip readers: each input is read as a
// .json.gz file by the ISA-L source and by the zlib source (the reference).
// What zlib accepts, ISA-L must accept with the same bytes; a refusal must be
// a TraceError. Anything else (ISA-L refusing or changing a file zlib reads,
// another exception, a crash or sanitizer report) is a finding. ISA-L may
// accept some deflate data zlib refuses (it decodes an incomplete Huffman code
// set that zlib calls "invalid literal/lengths set"): allowed, as what it
// decodes still has to pass the JSON parser; the fuzzer found such an input
// within seconds.
// Seeds: fuzz/corpus_gzip (one member, header fields, several members, padding).
#include <stdio.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "trace/byte_source.h"
#include "trace/trace.h"

namespace {

// Output beyond this is not compared (a small input can inflate a lot).
constexpr size_t kMaxOut = size_t{8} << 20;

struct Result {
  std::string bytes;
  bool refused = false;
  bool capped = false;
};

template <class Open>
Result drain(const uint8_t* data, size_t size, Open open) {
  Result r;
  FILE* f = fmemopen(const_cast<uint8_t*>(data), size, "rb");
  if (!f) std::abort();
  try {
    std::unique_ptr<jarvis::ByteSource> src = open(jarvis::FilePtr(f), std::string("fuzz.json.gz"));
    char buf[1 << 16];
    while (size_t n = src->read(buf, sizeof buf)) {
      r.bytes.append(buf, n);
      if (r.bytes.size() >= kMaxOut) {
        r.capped = true;
        r.bytes.resize(kMaxOut);
        break;
      }
    }
  } catch (const jarvis::TraceError&) {
    r.refused = true;
  }
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;  // the loader refuses an empty file before any reader
  Result isal = drain(data, size, jarvis::isal_gzip_source);
  Result zlib = drain(data, size, jarvis::zlib_gzip_source);
  if (isal.capped || zlib.capped) {
    // A prefix of the same stream: equal as far as both went.
    size_t n = std::min(isal.bytes.size(), zlib.bytes.size());
    if (isal.capped && zlib.capped && isal.bytes.compare(0, n, zlib.bytes, 0, n) != 0) std::abort();
    return 0;
  }
  if (zlib.refused) return 0;  // ISA-L may refuse it too, or be more lenient
  if (isal.refused || isal.bytes != zlib.bytes) std::abort();
  return 0;
}
