#include "trace/byte_source.h"

#include <fcntl.h>
#include <isa-l/igzip_lib.h>
#include <libdeflate.h>
#include <unistd.h>
#include <zlib.h>

#include <fmt/format.h>
#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "trace/trace.h"

namespace jarvis {

namespace {

const char* file_type_name(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "a special file";
}

// Refuses what open_trace_file refuses, from a status of the path or the descriptor.
void require_regular_file(const std::string& path, const struct stat& st) {
  if (S_ISDIR(st.st_mode))
    throw TraceError(fmt::format("{}: is a directory, not a trace file", path));
  if (!S_ISREG(st.st_mode))
    throw TraceError(fmt::format("'{}' is not a regular file ({}); give a trace file", path,
                                 file_type_name(st.st_mode)));
}

}  // namespace

FilePtr open_trace_file(const std::string& path, struct stat& st) {
  if (::stat(path.c_str(), &st) != 0) throw cannot_open(path, errno);
  require_regular_file(path, st);
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw cannot_open(path, errno);
  struct FdGuard {
    int fd;
    ~FdGuard() {
      if (fd >= 0) ::close(fd);
    }
  } guard{fd};
  if (::fstat(fd, &st) != 0) throw cannot_open(path, errno);
  require_regular_file(path, st);
  // Reads block as usual from here (O_NONBLOCK was only for the open).
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) throw cannot_open(path, errno);
  FILE* file = ::fdopen(fd, "rb");
  if (!file) throw cannot_open(path, errno);
  guard.fd = -1;
  return FilePtr(file);
}

namespace {

class PlainFileSource : public ByteSource {
 public:
  PlainFileSource(FilePtr file, std::string path)
      : file_(std::move(file)), path_(std::move(path)) {}
  size_t read(char* dst, size_t cap) override {
    size_t n = std::fread(dst, 1, cap, file_.get());
    if (n == 0 && std::ferror(file_.get()))
      throw TraceError(fmt::format("{}: read error: {}", path_, std::strerror(errno)));
    return n;
  }

 private:
  FilePtr file_;
  std::string path_;
};

// Reads a gzip file in chunks and walks its members; a subclass inflates.
// Multi-member files are plain concatenations: each member is inflated in
// turn by a fresh inflater state.
class GzipMembersSource : public ByteSource {
 public:
  GzipMembersSource(FilePtr file, std::string path)
      : file_(std::move(file)), path_(std::move(path)), in_(kInChunk) {}

  size_t read(char* dst, size_t cap) override {
    out_ = reinterpret_cast<unsigned char*>(dst);
    avail_out_ = std::min<size_t>(cap, 1u << 30);
    const size_t asked = avail_out_;
    while (avail_out_ > 0 && !finished_) {
      if (avail_in_ == 0 && !refill()) {
        if (in_member_)
          throw TraceError(
              fmt::format("{}: truncated gzip data (file ends inside a member)", path_));
        finished_ = true;
        break;
      }
      if (!in_member_) {
        start_member();
        if (finished_) break;
        begin_member();
      }
      const size_t in_before = avail_in_, out_before = avail_out_;
      if (inflate_some()) {
        in_member_ = false;
      } else if (avail_in_ == in_before && avail_out_ == out_before) {
        // Input and room left, yet nothing read or written: the loop would
        // never end. Neither inflater is known to do this; refuse, not hang.
        throw corrupt_data("the inflater made no progress");
      }
    }
    return asked - avail_out_;
  }

 protected:
  // Readies the inflater for a new member.
  virtual void begin_member() = 0;
  // Inflates from next_in_/avail_in_ into out_/avail_out_, advancing both;
  // true when the member (its trailer checked) has ended. Throws
  // corrupt_data() on bad data.
  virtual bool inflate_some() = 0;

  const std::string& path() const { return path_; }
  TraceError corrupt_data(std::string_view why) const {
    return TraceError(fmt::format("{}: corrupt gzip data ({})", path_, why));
  }

  const unsigned char* next_in_ = nullptr;
  size_t avail_in_ = 0;
  unsigned char* out_ = nullptr;
  size_t avail_out_ = 0;

 private:
  static constexpr size_t kInChunk = 256 << 10;

  // Called with input available at a member boundary. A following member
  // must start with the gzip magic; trailing zero padding (written by some
  // tape/archive tools, and tolerated by gzip(1)) ends the stream.
  void start_member() {
    const unsigned char* p = next_in_;
    if (members_ > 0 && p[0] == 0) {
      finished_ = true;
      return;
    }
    if (p[0] != 0x1f || (avail_in_ > 1 && p[1] != 0x8b)) {
      if (members_ == 0)
        throw TraceError(fmt::format("{}: not gzip data (bad magic bytes)", path_));
      throw TraceError(fmt::format("{}: data after gzip member {} is not gzip (trailing garbage)",
                                   path_, members_));
    }
    in_member_ = true;
    ++members_;
  }

  bool refill() {
    size_t n = std::fread(in_.data(), 1, in_.size(), file_.get());
    if (n == 0) {
      if (std::ferror(file_.get()))
        throw TraceError(fmt::format("{}: read error: {}", path_, std::strerror(errno)));
      return false;
    }
    next_in_ = in_.data();
    avail_in_ = n;
    return true;
  }

  FilePtr file_;
  std::string path_;
  std::vector<unsigned char> in_;
  bool in_member_ = false;
  bool finished_ = false;
  int members_ = 0;
};

class ZlibGzipSource : public GzipMembersSource {
 public:
  ZlibGzipSource(FilePtr file, std::string path)
      : GzipMembersSource(std::move(file), std::move(path)) {
    std::memset(&zs_, 0, sizeof zs_);
    if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK)
      throw TraceError(fmt::format("{}: cannot initialise zlib", this->path()));
  }
  ~ZlibGzipSource() override { inflateEnd(&zs_); }

 private:
  void begin_member() override { inflateReset(&zs_); }

  bool inflate_some() override {
    zs_.next_in = const_cast<Bytef*>(next_in_);
    zs_.avail_in = static_cast<uInt>(avail_in_);  // at most one input chunk
    zs_.next_out = out_;
    zs_.avail_out = static_cast<uInt>(avail_out_);  // at most 1 GiB
    int rc = inflate(&zs_, Z_NO_FLUSH);
    next_in_ = zs_.next_in;
    avail_in_ = zs_.avail_in;
    out_ = zs_.next_out;
    avail_out_ = zs_.avail_out;
    if (rc == Z_STREAM_END) return true;
    if (rc == Z_OK || rc == Z_BUF_ERROR) return false;  // Z_BUF_ERROR: needs more input
    throw corrupt_data(zs_.msg ? zs_.msg : "inflate failed");
  }

  z_stream zs_;
};

// ISA-L parses each member's gzip header (skipping name, comment and extra
// fields) and checks its CRC-32 and length against the trailer. Its state
// holds large decode tables, hence the heap.
class IsalGzipSource : public GzipMembersSource {
 public:
  IsalGzipSource(FilePtr file, std::string path)
      : GzipMembersSource(std::move(file), std::move(path)),
        state_(std::make_unique<inflate_state>()) {}

 private:
  void begin_member() override {
    isal_inflate_init(state_.get());
    state_->crc_flag = ISAL_GZIP;
  }

  bool inflate_some() override {
    inflate_state& st = *state_;
    st.next_in = const_cast<uint8_t*>(next_in_);
    st.avail_in = static_cast<uint32_t>(avail_in_);
    st.next_out = out_;
    st.avail_out = static_cast<uint32_t>(avail_out_);
    int rc = isal_inflate(&st);
    next_in_ = st.next_in;
    avail_in_ = st.avail_in;
    out_ = st.next_out;
    avail_out_ = st.avail_out;
    if (rc < 0) throw corrupt_data(isal_error_text(rc));
    // At the member's end ISA-L gives back the input it read ahead, so the
    // next member (or the padding) starts at next_in_.
    return st.block_state == ISAL_BLOCK_FINISH;
  }

  static const char* isal_error_text(int rc) {
    switch (rc) {
      case ISAL_INVALID_BLOCK:
        return "invalid deflate block";
      case ISAL_INVALID_SYMBOL:
        return "invalid deflate symbol";
      case ISAL_INVALID_LOOKBACK:
        return "invalid distance too far back";
      case ISAL_INVALID_WRAPPER:
        return "invalid gzip header";
      case ISAL_UNSUPPORTED_METHOD:
        return "unknown compression method";
      case ISAL_INCORRECT_CHECKSUM:
        return "incorrect data check";
      default:
        return "inflate failed";
    }
  }

  std::unique_ptr<inflate_state> state_;
};

// A whole gzip file inflated at once by libdeflate, every member in turn, into
// one buffer sized from the trailer's ISIZE (grown for further members).
class WholeGzipSource : public ByteSource {
 public:
  // Null when libdeflate cannot do it within max_out bytes of output (not
  // plain gzip members, corrupt or truncated data, larger output): the
  // caller streams with zlib instead, which words any error.
  static std::unique_ptr<WholeGzipSource> inflate(FILE* f, uint64_t file_size, uint64_t size_hint,
                                                  uint64_t max_out) {
    if (file_size == 0 || file_size > max_out) return nullptr;
    std::vector<unsigned char> in(static_cast<size_t>(file_size));
    if (std::fseek(f, 0, SEEK_SET) != 0 || std::fread(in.data(), 1, in.size(), f) != in.size())
      return nullptr;
    std::unique_ptr<libdeflate_decompressor, DecompressorFree> d(libdeflate_alloc_decompressor());
    if (!d) return nullptr;
    auto out = std::unique_ptr<WholeGzipSource>(new WholeGzipSource);
    size_t cap = static_cast<size_t>(std::min(std::max<uint64_t>(size_hint, 1u << 16), max_out));
    out->data_.reset(static_cast<char*>(std::malloc(cap)));
    if (!out->data_) return nullptr;
    size_t pos = 0, len = 0, members = 0;
    while (pos < in.size()) {
      if (members > 0 && in[pos] == 0) break;  // trailing zero padding, as GzipMembersSource
      if (in.size() - pos < 2 || in[pos] != 0x1f || in[pos + 1] != 0x8b) return nullptr;
      for (;;) {
        size_t used = 0, got = 0;
        libdeflate_result rc =
            libdeflate_gzip_decompress_ex(d.get(), in.data() + pos, in.size() - pos,
                                          out->data_.get() + len, cap - len, &used, &got);
        if (rc == LIBDEFLATE_SUCCESS) {
          pos += used;
          len += got;
          ++members;
          break;
        }
        if (rc != LIBDEFLATE_INSUFFICIENT_SPACE || cap >= max_out) return nullptr;
        cap = static_cast<size_t>(std::min<uint64_t>(max_out, uint64_t{cap} * 2));
        char* grown = static_cast<char*>(std::realloc(out->data_.get(), cap));
        if (!grown) return nullptr;
        (void)out->data_.release();
        out->data_.reset(grown);
      }
    }
    out->size_ = len;
    return out;
  }

  size_t read(char* dst, size_t cap) override {
    size_t n = std::min(cap, size_ - pos_);
    std::memcpy(dst, data_.get() + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  WholeGzipSource() = default;
  struct DecompressorFree {
    void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
  };
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> data_;
  size_t size_ = 0;
  size_t pos_ = 0;
};

// Runs another source on a worker thread so decompression overlaps parsing.
// A few fixed chunks circulate between the two threads; an error raised by
// the worker is rethrown to the reader once the data before it is consumed.
class PipelinedSource : public ByteSource {
 public:
  explicit PipelinedSource(std::unique_ptr<ByteSource> inner) : inner_(std::move(inner)) {
    // Not zero-filled: the inflate thread's first write faults the pages in
    // there, off the reading thread.
    for (auto& chunk : chunks_) {
      chunk.data = std::make_unique_for_overwrite<char[]>(kChunk);
      free_.push_back(&chunk);
    }
    worker_ = std::thread([this] { produce(); });
  }
  ~PipelinedSource() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  size_t read(char* dst, size_t cap) override {
    size_t total = 0;
    while (total < cap) {
      if (!current_ && !take_chunk(total == 0)) break;
      size_t n = std::min(cap - total, current_->size - current_pos_);
      std::memcpy(dst + total, current_->data.get() + current_pos_, n);
      total += n;
      current_pos_ += n;
      if (current_pos_ == current_->size) release_current();
    }
    return total;
  }

 private:
  static constexpr size_t kChunk = 256 << 10;
  static constexpr size_t kChunks = 4;
  struct Chunk {
    std::unique_ptr<char[]> data;
    size_t size = 0;
  };

  // Takes the next filled chunk; waits only when nothing was read yet.
  bool take_chunk(bool wait) {
    std::unique_lock lock(mu_);
    if (wait) cv_.wait(lock, [&] { return !filled_.empty() || done_; });
    if (filled_.empty()) {
      if (done_ && error_ && wait) std::rethrow_exception(error_);
      return false;
    }
    current_ = filled_.front();
    filled_.pop_front();
    current_pos_ = 0;
    return true;
  }
  void release_current() {
    {
      std::lock_guard lock(mu_);
      free_.push_back(current_);
    }
    current_ = nullptr;
    cv_.notify_all();
  }

  void produce() {
    try {
      for (;;) {
        Chunk* chunk = nullptr;
        {
          std::unique_lock lock(mu_);
          cv_.wait(lock, [&] { return !free_.empty() || stop_; });
          if (stop_) break;
          chunk = free_.front();
          free_.pop_front();
        }
        chunk->size = inner_->read(chunk->data.get(), kChunk);
        std::lock_guard lock(mu_);
        if (chunk->size == 0) break;
        filled_.push_back(chunk);
        cv_.notify_all();
      }
    } catch (...) {
      std::lock_guard lock(mu_);
      error_ = std::current_exception();
    }
    std::lock_guard lock(mu_);
    done_ = true;
    cv_.notify_all();
  }

  std::unique_ptr<ByteSource> inner_;
  Chunk chunks_[kChunks];
  std::deque<Chunk*> free_;
  std::deque<Chunk*> filled_;
  Chunk* current_ = nullptr;
  size_t current_pos_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool done_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

}  // namespace

size_t MemorySource::read(char* dst, size_t cap) {
  size_t n = std::min(cap, data_.size() - pos_);
  std::memcpy(dst, data_.data() + pos_, n);
  pos_ += n;
  return n;
}

std::unique_ptr<ByteSource> plain_file_source(FilePtr file, std::string path) {
  return std::make_unique<PlainFileSource>(std::move(file), std::move(path));
}

std::unique_ptr<ByteSource> zlib_gzip_source(FilePtr file, std::string path) {
  return std::make_unique<ZlibGzipSource>(std::move(file), std::move(path));
}

std::unique_ptr<ByteSource> isal_gzip_source(FilePtr file, std::string path) {
  return std::make_unique<IsalGzipSource>(std::move(file), std::move(path));
}

std::unique_ptr<ByteSource> libdeflate_whole_source(FILE* file, uint64_t file_size,
                                                    uint64_t size_hint, uint64_t max_out) {
  return WholeGzipSource::inflate(file, file_size, size_hint, max_out);
}

std::unique_ptr<ByteSource> pipelined_source(std::unique_ptr<ByteSource> inner) {
  return std::make_unique<PipelinedSource>(std::move(inner));
}

uint64_t gzip_size_hint(FILE* f, uint64_t file_size) {
  unsigned char t[4];
  if (file_size < 18 || std::fseek(f, -4, SEEK_END) != 0 || std::fread(t, 1, 4, f) != 4)
    return file_size * 8;
  uint64_t isize = t[0] | (t[1] << 8) | (t[2] << 16) | (static_cast<uint64_t>(t[3]) << 24);
  return isize >= file_size ? isize : file_size * 8;
}

}  // namespace jarvis
