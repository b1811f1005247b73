#include "rocprof/io.h"
#include "base/output_guard.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "base/file_ptr.h"
#include "trace/byte_source.h"
#include "trace/trace.h"

namespace jarvis::rocprof::io {

namespace {

std::string read_raw(const std::string& path, size_t limit) {
  struct stat st;
  FilePtr f = open_trace_file(path, st);  // a FIFO or device is refused, never waited on
  note_input_file(path);                  // never a target of this process's writes
  std::string out;
  char buf[1 << 16];
  size_t n;
  while (out.size() < limit &&
         (n = std::fread(buf, 1, std::min(sizeof buf, limit - out.size()), f.get())) > 0)
    out.append(buf, n);
  if (std::ferror(f.get())) throw TraceError(path + ": read error");
  return out;
}

bool is_gzip(const std::string& data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

// Inflates every gzip member; `limit` stops early (peeking). Trailing zero
// padding after the last member is tolerated, as gzip(1) does. Input is fed
// in chunks because zlib counts available bytes in 32 bits. `data_is_prefix`:
// `data` is only the file's first bytes (a peek), so running out of it ends
// the text instead of meaning truncated gzip data.
std::string gunzip(const std::string& path, const std::string& data, size_t limit,
                   bool data_is_prefix = false) {
  std::string out;
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw TraceError(path + ": zlib init failed");
  const char* next = data.data();
  const char* end = data.data() + data.size();
  auto feed = [&] {
    size_t n = std::min<size_t>(static_cast<size_t>(end - next), size_t{1} << 30);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(next));
    zs.avail_in = static_cast<uInt>(n);
    next += n;
  };
  feed();
  char buf[1 << 16];
  int rc = Z_OK;
  while (out.size() < limit) {
    if (zs.avail_in == 0 && next < end) feed();
    // A peek inflates no more than it keeps (4 KiB to sniff a format, not 64).
    const auto room = static_cast<uInt>(std::min(sizeof buf, limit - out.size()));
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = room;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, room - zs.avail_out);
    if (rc == Z_STREAM_END) {
      const char* p = reinterpret_cast<const char*>(zs.next_in);  // input is contiguous
      while (p < end && *p == '\0') ++p;
      if (p == end) break;
      inflateReset(&zs);
      next = p;
      feed();
      continue;
    }
    if (rc != Z_OK) break;
    if (zs.avail_in == 0 && next == end && zs.avail_out != 0) {
      rc = Z_BUF_ERROR;  // input ended inside a member
      break;
    }
  }
  inflateEnd(&zs);
  if (data_is_prefix && rc == Z_BUF_ERROR) return out;
  if (out.size() < limit && rc != Z_STREAM_END)
    throw TraceError(path + (rc == Z_BUF_ERROR ? ": truncated gzip data" : ": corrupt gzip data"));
  return out;
}

}  // namespace

std::string read_text(const std::string& path, uint64_t* file_bytes) {
  std::string raw = read_raw(path, SIZE_MAX);
  if (file_bytes) *file_bytes = raw.size();
  return is_gzip(raw) ? gunzip(path, raw, SIZE_MAX) : raw;
}

std::string peek_text(const std::string& path, size_t limit) {
  try {
    // The sniff runs ahead of every trace load: 16 KiB of gzip data give the
    // first 4 KiB of text in tens of microseconds. A gzip header with a long
    // name or comment needs more input: then up to 1 MiB is read.
    std::string text;
    for (size_t raw_limit :
         {std::max<size_t>(limit, 16 * 1024), std::max<size_t>(limit, 1 << 20)}) {
      std::string raw = read_raw(path, raw_limit);
      if (!is_gzip(raw)) return raw.substr(0, limit);
      text = gunzip(path, raw, limit, true);
      if (text.size() >= limit || raw.size() < raw_limit) break;
    }
    return text.substr(0, limit);
  } catch (const TraceError&) {
    return "";
  }
}

}  // namespace jarvis::rocprof::io
