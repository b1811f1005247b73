// Byte sources for the trace readers: the bytes of a plain file, of a gzip
// file (every member in turn, inflated by ISA-L, zlib or libdeflate), of a
// document in memory, and a wrapper that produces another source's bytes on a
// second thread so decompression overlaps the parse.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "base/file_ptr.h"

namespace jarvis {

// Opens a trace file for reading, refusing anything but a regular file: a
// FIFO would block the reader (a server worker, a sweep job) until a writer
// comes, a character device such as /dev/zero would never end. The path is
// stat'ed first, then opened non-blocking (opening a FIFO waits for a writer
// otherwise) and the opened descriptor checked again, so a file swapped for a
// FIFO in between is refused too. `st` gets the opened file's status.
// Throws TraceError: "'X' is not a regular file (a FIFO); give a trace file",
// "X: is a directory, not a trace file", or cannot_open's message.
FilePtr open_trace_file(const std::string& path, struct stat& st);

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills up to cap bytes; returns 0 at end of data. Throws TraceError.
  virtual size_t read(char* dst, size_t cap) = 0;
  // Bytes left to read when the source knows (a document in memory), else 0.
  virtual size_t remaining_hint() const { return 0; }
};

// The file's bytes as they are.
std::unique_ptr<ByteSource> plain_file_source(FilePtr file, std::string path);

// The inflated bytes of a gzip file, read from its current position, one
// input chunk at a time (memory: one chunk). Concatenated members are read in
// turn; trailing zero padding after a member ends the data (as gzip(1)
// tolerates it). Errors name the file: "not gzip data", "truncated gzip
// data", "corrupt gzip data (...)", "... trailing garbage".
//   zlib: the reference inflater.
//   ISA-L (igzip): about 3x zlib's speed on x86-64 with the same checks
//   (header, CRC-32 and length of every member).
std::unique_ptr<ByteSource> zlib_gzip_source(FilePtr file, std::string path);
std::unique_ptr<ByteSource> isal_gzip_source(FilePtr file, std::string path);

// The whole gzip file inflated at once by libdeflate, every member in turn,
// into one buffer sized from size_hint (grown for further members). Null
// when libdeflate cannot do it within max_out bytes of output (not plain gzip
// members, corrupt or truncated data, larger output): the caller streams
// instead, which words any error.
std::unique_ptr<ByteSource> libdeflate_whole_source(FILE* file, uint64_t file_size,
                                                    uint64_t size_hint, uint64_t max_out);

// `inner` read on a worker thread a few fixed chunks ahead of the caller; an
// error raised there is rethrown once the data before it is consumed.
std::unique_ptr<ByteSource> pipelined_source(std::unique_ptr<ByteSource> inner);

// A document in memory (not copied: `data` must outlive the source).
class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::string_view data) : data_(data) {}
  size_t read(char* dst, size_t cap) override;
  size_t remaining_hint() const override { return data_.size() - pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// Uncompressed size of a gzip file from its trailer (ISIZE, size mod 2^32 of
// the last member): a hint only, checked for plausibility (8x the file when
// the trailer cannot be read or is smaller than the file). Moves f's position.
uint64_t gzip_size_hint(FILE* f, uint64_t file_size);

}  // namespace jarvis
