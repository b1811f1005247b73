// The gzip inflate modes of load_trace (trace/loader.h), for the tests and
// the benchmark that compare them; load_trace(path, options) is Auto.
#pragma once

#include <cstdint>
#include <string>

#include "trace/trace.h"

namespace jarvis {

// How a gzip file is inflated. Every mode gives the identical Trace; they
// differ in time and memory only (bench/RESULTS.md has the measurements).
enum class GzipInflate {
  // IsalPipelined where the machine has a second core, else IsalStream.
  Auto,
  // ISA-L (igzip) on the parsing thread, one chunk at a time (memory: one
  // chunk). About 3x zlib's speed with the same checks.
  IsalStream,
  // ISA-L on a second thread filling a few chunks ahead of the parser, so
  // inflate and parse overlap (memory: a few chunks).
  IsalPipelined,
  // zlib, the reference inflater, as IsalStream and IsalPipelined.
  ZlibStream,
  ZlibPipelined,
  // The whole file inflated at once by libdeflate (about 2.5x zlib's
  // speed, but the whole JSON text is held and nothing overlaps the parse),
  // used up to kWholeInflateMaxBytes of JSON; larger files, and data
  // libdeflate refuses (corrupt, truncated, not gzip), go to ZlibStream,
  // which also words the error.
  Libdeflate,
};
inline constexpr uint64_t kWholeInflateMaxBytes = uint64_t{512} << 20;
Trace load_trace(const std::string& path, const LoadOptions& options, GzipInflate inflate);

}  // namespace jarvis
