#include "trace/snapshot.h"
#include "base/cache_prune.h"
#include "base/output_guard.h"
#include "trace/cache_file.h"

#include <fcntl.h>
#include <isa-l/crc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <functional>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/atomic_file.h"
#include "base/file_ptr.h"
#include "base/keyed_mac.h"
#include "base/random_id.h"
#include "trace/byte_source.h"
#include "trace/gzip_inflate.h"

namespace jarvis {

namespace fs = std::filesystem;

namespace {

static_assert(std::is_trivially_copyable_v<Event>, "events are written as raw bytes");

constexpr char kMagic[8] = {'J', 'R', 'V', 'S', 'N', 'A', 'P', '\0'};
constexpr uint64_t kEdgeBytes = 64 * 1024;
constexpr int kMaxValueDepth = 200;

// Fixed header. The payload (everything after it) is covered by payload_crc
// against damage, and the payload then the header up to `mac` by the keyed
// MAC against edits: only the holder of the cache's key can make a snapshot
// this cache trusts.
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t event_size;
  uint64_t payload_bytes;
  uint32_t payload_crc;
  uint32_t reserved;
  MacNonce mac_nonce;  // fresh per write
  MacTag mac;
};
static_assert(sizeof(Header) == 64);
constexpr size_t kHeaderMacCovers = offsetof(Header, mac);

static_assert(std::is_same_v<SnapshotMacKey, MacKey>);

// Raised inside the reader: the reason the snapshot is not used.
struct Unusable {
  std::string reason;
};

// CRC-32 (the gzip polynomial, chainable like zlib's crc32). ISA-L's folding
// with carry-less multiplies runs ~4x faster than libdeflate's here, and the
// payload check is a fifth of a small snapshot's load; the values are equal.
uint32_t checksum(uint32_t crc, const void* p, uint64_t n) {
  return crc32_gzip_refl(crc, static_cast<const unsigned char*>(p), n);
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// ---------------------------------------------------------------- writing

class Writer {
 public:
  Writer(FILE* f, PayloadMac& mac) : f_(f), mac_(mac) {}
  void raw(const void* p, size_t n) {
    if (n == 0) return;
    if (std::fwrite(p, 1, n, f_) != n) throw std::runtime_error(std::strerror(errno));
    crc_ = checksum(crc_, p, n);
    mac_.update(p, n);
    bytes_ += n;
  }
  template <class T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    raw(&v, sizeof v);
  }
  void u64(uint64_t v) { pod(v); }
  void str(std::string_view s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  void proc(const ProcId& p) {
    pod(p.value);
    pod(static_cast<uint8_t>(p.is_string));
  }
  void value(const PyValue& v) {
    pod(static_cast<uint8_t>(v.kind));
    switch (v.kind) {
      case PyValue::Kind::None:
        break;
      case PyValue::Kind::Bool:
        pod(static_cast<uint8_t>(v.b));
        break;
      case PyValue::Kind::Int:
        pod(v.i);
        break;
      case PyValue::Kind::Float:
        pod(v.f);
        break;
      case PyValue::Kind::String:
        str(v.s);
        break;
      case PyValue::Kind::List:
      case PyValue::Kind::Tuple:
      case PyValue::Kind::Dict:  // key, value, ... (recorded args hold lists only)
        u64(v.list.size());
        for (const PyValue& item : v.list) value(item);
        break;
    }
  }
  // Zero bytes up to the next multiple of `alignment` of the file offset (the
  // header's 64 bytes keep payload and file offsets congruent), so that a
  // reader can use the array that follows in place.
  void align(size_t alignment) {
    static constexpr char kZeros[16] = {};
    size_t pad = (alignment - bytes_ % alignment) % alignment;
    raw(kZeros, pad);
  }
  uint32_t crc() const { return crc_; }
  uint64_t bytes() const { return bytes_; }

 private:
  FILE* f_;
  PayloadMac& mac_;
  uint32_t crc_ = 0;
  uint64_t bytes_ = 0;
};

void write_key(Writer& w, const SnapshotKey& key) {
  w.str(key.canonical_path);
  w.u64(key.device);
  w.u64(key.size);
  w.pod(key.mtime_ns);
  w.u64(key.inode);
  w.pod(key.edge_crc);
}

void write_payload(Writer& w, const SnapshotKey& key, const Trace& t) {
  write_key(w, key);
  w.u64(t.json_bytes);
  w.u64(t.file_bytes);
  w.u64(t.clamped_negative_durations);
  w.pod(static_cast<uint8_t>(t.platform));
  w.u64(t.strings.size());
  for (size_t i = 0; i < t.strings.size(); ++i) w.str(t.strings.view(static_cast<uint32_t>(i)));
  w.u64(t.events.size());
  w.align(alignof(Event));
  w.raw(t.events.data(), t.events.size() * sizeof(Event));
  w.u64(t.threads.size());
  for (const ThreadKey& k : t.threads) {
    w.proc(k.pid);
    w.proc(k.tid);
  }
  w.u64(t.sparse_ids().size());
  w.align(alignof(int64_t));
  w.raw(t.sparse_ids().data(), t.sparse_ids().size() * sizeof(int64_t));
  w.u64(t.arg_lists.size());
  for (const ArgList& list : t.arg_lists) {
    w.u64(list.size());
    for (const auto& [k, v] : list) {
      w.pod(k);
      w.value(v);
    }
  }
  // In key order, so equal traces give equal bytes whatever the hash maps' history.
  auto proc_map = [&](const auto& m) {
    std::vector<const std::pair<const ProcId, std::string>*> entries;
    entries.reserve(m.size());
    for (const auto& entry : m) entries.push_back(&entry);
    std::sort(entries.begin(), entries.end(),
              [](const auto* a, const auto* b) { return a->first < b->first; });
    w.u64(entries.size());
    for (const auto* entry : entries) {
      w.proc(entry->first);
      w.str(entry->second);
    }
  };
  proc_map(t.metadata.process_name);
  proc_map(t.metadata.process_labels);
  w.u64(t.metadata.thread_name.size());
  for (const auto& [pt, s] : t.metadata.thread_name) {
    w.proc(pt.first);
    w.proc(pt.second);
    w.str(s);
  }
  w.u64(t.top_level_json.size());
  for (const auto& [k, v] : t.top_level_json) {
    w.str(k);
    w.str(v);
  }
}

// ---------------------------------------------------------------- reading

// Reads the payload in place from the mapped file and checksums it (CRC-32
// and MAC) in payload order (checksum_to), at the pace the caller checks what
// it read.
class Reader {
 public:
  Reader(const char* file_start, const char* payload, uint64_t payload_bytes, PayloadMac& mac)
      : mac_(mac),
        file_start_(file_start),
        p_(payload),
        left_(payload_bytes),
        checked_(payload),
        end_(payload + payload_bytes) {}
  // Extends the checksum over the payload up to `to` (a point not before the
  // last one, inside the payload).
  void checksum_to(const char* to) {
    if (to < checked_ || to > end_) throw std::logic_error("snapshot checksum out of order");
    crc_ = checksum(crc_, checked_, static_cast<uint64_t>(to - checked_));
    mac_.update(checked_, static_cast<size_t>(to - checked_));
    checked_ = to;
  }
  void checksum_to_end() { checksum_to(end_); }
  // The checksum of the whole payload, once checksum_to_end has run.
  uint32_t crc() const { return crc_; }
  // The next n bytes, in place.
  const char* take(uint64_t n) {
    if (n > left_) throw Unusable{"corrupt: a length points past the end of the snapshot"};
    const char* at = p_;
    p_ += n;
    left_ -= n;
    return at;
  }
  void raw(void* p, size_t n) {
    if (n != 0) std::memcpy(p, take(n), n);
  }
  // Skips the writer's zero padding up to the next multiple of `alignment`.
  void align(size_t alignment) {
    auto offset = static_cast<size_t>(p_ - file_start_);
    const char* pad = take((alignment - offset % alignment) % alignment);
    for (const char* c = pad; c != p_; ++c)
      if (*c != 0) throw Unusable{"corrupt: padding"};
  }
  // `count` elements of T in place (the mapping is private and writable, so
  // the view may be written: copy on write, the file never changes).
  template <class T>
  MappableVector<T> array(const std::shared_ptr<void>& mapping, uint64_t count) {
    align(alignof(T));
    const char* at = take(count * sizeof(T));
    return MappableVector<T>::view(mapping, reinterpret_cast<T*>(const_cast<char*>(at)), count);
  }
  template <class T>
  T pod() {
    T v;
    raw(&v, sizeof v);
    return v;
  }
  uint64_t u64() { return pod<uint64_t>(); }
  // A count of items of at least `min_bytes` each, checked against what is left.
  uint64_t count(uint64_t min_bytes) {
    uint64_t n = u64();
    if (min_bytes && n > left_ / min_bytes) throw Unusable{"corrupt: a count exceeds the data"};
    return n;
  }
  // A string in place (valid while the mapping lives).
  std::string_view str_view() {
    uint64_t n = count(1);
    return {take(n), n};
  }
  std::string str() {
    uint64_t n = count(1);
    std::string s(n, '\0');
    raw(s.data(), n);
    return s;
  }
  ProcId proc(const StringPool& strings) {
    ProcId p;
    p.value = pod<int64_t>();
    uint8_t is_string = pod<uint8_t>();
    if (is_string > 1) throw Unusable{"corrupt: a process id flag"};
    p.is_string = is_string != 0;
    if (p.is_string && (p.value < 0 || static_cast<uint64_t>(p.value) >= strings.size()))
      throw Unusable{"corrupt: a process id string out of range"};
    return p;
  }
  PyValue value(int depth) {
    if (depth > kMaxValueDepth) throw Unusable{"corrupt: an arg value nested too deeply"};
    auto kind = pod<uint8_t>();
    switch (static_cast<PyValue::Kind>(kind)) {
      case PyValue::Kind::None:
        return PyValue::none();
      case PyValue::Kind::Bool: {
        uint8_t b = pod<uint8_t>();
        if (b > 1) throw Unusable{"corrupt: a boolean arg"};
        return PyValue::boolean(b != 0);
      }
      case PyValue::Kind::Int:
        return PyValue::integer(pod<int64_t>());
      case PyValue::Kind::Float:
        return PyValue::real(pod<double>());
      case PyValue::Kind::String:
        return PyValue::string(str());
      case PyValue::Kind::List:
      case PyValue::Kind::Tuple:
      case PyValue::Kind::Dict: {
        uint64_t n = count(1);
        if (static_cast<PyValue::Kind>(kind) == PyValue::Kind::Dict && n % 2 != 0)
          throw Unusable{"corrupt: a dict arg with a key and no value"};
        std::vector<PyValue> items;
        items.reserve(n);
        for (uint64_t i = 0; i < n; ++i) items.push_back(value(depth + 1));
        PyValue v = PyValue::make_list(std::move(items));
        v.kind = static_cast<PyValue::Kind>(kind);
        return v;
      }
    }
    throw Unusable{"corrupt: an unknown arg value kind"};
  }
  uint64_t left() const { return left_; }
  const char* position() const { return p_; }

 private:
  PayloadMac& mac_;
  const char* file_start_;
  const char* p_;
  uint64_t left_;
  const char* checked_;  // the checksum covers [payload, checked_)
  const char* end_;
  uint32_t crc_ = 0;
};

SnapshotKey read_key(Reader& r) {
  SnapshotKey k;
  k.canonical_path = r.str();
  k.device = r.u64();
  k.size = r.u64();
  k.mtime_ns = r.pod<int64_t>();
  k.inode = r.u64();
  k.edge_crc = r.pod<uint32_t>();
  return k;
}

std::string stale_reason(const SnapshotKey& was, const SnapshotKey& now) {
  if (was.canonical_path != now.canonical_path)
    return "it belongs to another file (hash collision)";
  if (was.size != now.size)
    return fmt::format("the trace changed size ({} -> {} bytes)", was.size, now.size);
  if (was.mtime_ns != now.mtime_ns) return "the trace was modified (mtime changed)";
  if (was.inode != now.inode || was.device != now.device)
    return "the trace was replaced (inode changed)";
  return "the trace's content changed (edge checksum)";
}

Trace read_payload(Reader& r, const std::shared_ptr<void>& mapping, const SnapshotKey& key) {
  SnapshotKey was = read_key(r);
  if (!(was == key)) throw Unusable{"stale: " + stale_reason(was, key)};
  Trace t;
  t.json_bytes = r.u64();
  t.file_bytes = r.u64();
  t.clamped_negative_durations = r.u64();
  auto platform = r.pod<uint8_t>();
  if (platform > static_cast<uint8_t>(Platform::Rocm)) throw Unusable{"corrupt: platform"};
  t.platform = static_cast<Platform>(platform);
  uint64_t n_strings = r.count(sizeof(uint64_t));
  for (uint64_t i = 0; i < n_strings; ++i)
    if (t.strings.intern(r.str_view()) != i) throw Unusable{"corrupt: a repeated string"};
  uint64_t n_events = r.count(sizeof(Event));
  t.events = r.array<Event>(mapping, n_events);
  const char* events_end = r.position();
  uint64_t n_threads = r.count(18);
  t.threads.clear();
  t.threads.reserve(n_threads);
  for (uint64_t i = 0; i < n_threads; ++i) {
    ThreadKey k;
    k.pid = r.proc(t.strings);
    k.tid = r.proc(t.strings);
    t.threads.push_back(k);
  }
  uint64_t n_ids = r.count(sizeof(int64_t));
  MappableVector<int64_t> ids = r.array<int64_t>(mapping, n_ids);
  uint64_t n_lists = r.count(sizeof(uint64_t));
  t.arg_lists.resize(n_lists);
  for (ArgList& list : t.arg_lists) {
    uint64_t n = r.count(5);
    list.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      auto k = r.pod<uint32_t>();
      if (k >= t.strings.size()) throw Unusable{"corrupt: an arg key out of range"};
      list.emplace_back(k, r.value(0));
    }
  }
  auto proc_map = [&](auto& m) {
    uint64_t n = r.count(17);
    for (uint64_t i = 0; i < n; ++i) {
      ProcId p = r.proc(t.strings);
      m[p] = r.str();
    }
  };
  proc_map(t.metadata.process_name);
  proc_map(t.metadata.process_labels);
  uint64_t n_names = r.count(26);
  for (uint64_t i = 0; i < n_names; ++i) {
    ProcId pid = r.proc(t.strings);
    ProcId tid = r.proc(t.strings);
    t.metadata.thread_name[{pid, tid}] = r.str();
  }
  uint64_t n_top = r.count(16);
  for (uint64_t i = 0; i < n_top; ++i) {
    std::string k = r.str();
    t.top_level_json.emplace_back(std::move(k), r.str());
  }
  if (r.left() != 0) throw Unusable{"corrupt: trailing bytes"};
  // The events are checksummed block by block as they are checked, the rest
  // of the payload before and after them.
  r.checksum_to(events_end - n_events * sizeof(Event));
  try {
    t.restore_side_tables(std::move(ids), [&r](const Event* block, size_t n) {
      r.checksum_to(reinterpret_cast<const char*>(block + n));
    });
  } catch (const std::invalid_argument& e) {
    throw Unusable{std::string("corrupt: ") + e.what()};
  }
  r.checksum_to_end();
  return t;
}

void default_log(std::string_view reason) {
  std::fprintf(stderr, "jarvis: trace snapshot: %.*s\n", static_cast<int>(reason.size()),
               reason.data());
}

// ---------------------------------------------------------------- trust

// Why a file or directory of the cache may have been written by someone
// else ("" when only this user, or root, could have): not owned by the
// effective user, or writable by group or others.
std::string foreign_owner_reason(const struct stat& st) {
  if (st.st_uid != ::geteuid())
    return fmt::format("owned by uid {}, not by this user (uid {})", st.st_uid, ::geteuid());
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return fmt::format("writable by {} (mode {:04o})",
                       (st.st_mode & S_IWOTH) != 0 ? "others" : "its group", st.st_mode & 07777);
  return "";
}

std::string untrusted_file_reason(const struct stat& st) {
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  return foreign_owner_reason(st);
}

// Creates `dir` mode 0700 if missing (its parents with the default mode),
// then checks the directory itself (lstat: a symbolic link is refused, as
// whoever can write its parent could point it elsewhere). "" when it is this
// user's own, else why not.
std::string make_private_directory(const fs::path& dir) {
  std::error_code ec;
  if (dir.has_parent_path()) fs::create_directories(dir.parent_path(), ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return fmt::format("cannot create it: {}", std::strerror(errno));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0)
    return fmt::format("cannot read it: {}", std::strerror(errno));
  if (S_ISLNK(st.st_mode)) return "it is a symbolic link (name the directory itself)";
  if (!S_ISDIR(st.st_mode)) return "it is not a directory";
  if (std::string why = foreign_owner_reason(st); !why.empty()) return "it is " + why;
  return "";
}

constexpr size_t kKeyBytes = sizeof(SnapshotMacKey);

// The key file's 32 bytes; nullopt with `problem` empty when there is none
// yet, or with `problem` set when it cannot be trusted or read.
std::optional<SnapshotMacKey> read_mac_key(const fs::path& file, std::string& problem) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno != ENOENT)
      problem = fmt::format("its key {}: {}", file.string(), std::strerror(errno));
    return std::nullopt;
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    problem = fmt::format("its key {}: {}", file.string(), std::strerror(errno));
    return std::nullopt;
  }
  std::string why = untrusted_file_reason(st);
  if (why.empty() && (st.st_mode & 077) != 0)
    why = fmt::format("readable by others (mode {:04o})", st.st_mode & 07777);
  if (why.empty() && st.st_size != static_cast<off_t>(kKeyBytes))
    why = fmt::format("{} bytes, not {}", st.st_size, kKeyBytes);
  SnapshotMacKey key{};
  if (why.empty() && ::pread(fd, key.data(), kKeyBytes, 0) != static_cast<ssize_t>(kKeyBytes))
    why = "cannot be read";
  if (!why.empty()) {
    problem = fmt::format("its key {} is {}", file.string(), why);
    return std::nullopt;
  }
  return key;
}

// A fresh random key, written to a temp file 0600 and linked into place:
// link() fails rather than replace a key another process made meanwhile
// (that one is used instead), so every writer of the cache uses one key.
std::optional<SnapshotMacKey> create_mac_key(const fs::path& file, std::string& problem) {
  SnapshotMacKey key{};
  fill_random(key);
  fs::path temp = file.parent_path() / fmt::format(".key.tmp.{}", random_hex(8));
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    problem = fmt::format("cannot create its key: {}", std::strerror(errno));
    return std::nullopt;
  }
  bool written =
      ::write(fd, key.data(), kKeyBytes) == static_cast<ssize_t>(kKeyBytes) && ::fsync(fd) == 0;
  int err = errno;
  ::close(fd);
  int linked = written ? ::link(temp.c_str(), file.c_str()) : -1;
  if (written && linked != 0) err = errno;
  ::unlink(temp.c_str());
  if (linked == 0) return key;
  if (written && err == EEXIST) return read_mac_key(file, problem);  // another process won
  problem = fmt::format("cannot create its key: {}", std::strerror(err));
  return std::nullopt;
}

// One warning per cache directory and process: every load would repeat it.
void warn_once(const SnapshotLog& log, const std::string& dir, const std::string& problem) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  {
    std::lock_guard lock(mutex);
    if (!warned.insert(dir).second) return;
  }
  log(fmt::format("cache directory {} not used: {}; traces are loaded from their files", dir,
                  problem));
}

}  // namespace

std::optional<SnapshotMacKey> open_snapshot_cache(const std::string& cache_dir,
                                                  std::string& problem) {
  problem.clear();
  fs::path dir(cache_dir);
  if (std::string why = make_private_directory(dir); !why.empty()) {
    problem = why;
    return std::nullopt;
  }
  if (std::string why = make_private_directory(dir / "snapshots"); !why.empty()) {
    problem = "its snapshots directory: " + why;
    return std::nullopt;
  }
  fs::path key_file = dir / "key";
  if (std::optional<SnapshotMacKey> key = read_mac_key(key_file, problem)) return key;
  if (!problem.empty()) return std::nullopt;
  return create_mac_key(key_file, problem);
}

SnapshotKey snapshot_key(const std::string& path) {
  std::error_code ec;
  fs::path canonical = fs::canonical(path, ec);
  if (ec) throw TraceError(fmt::format("{}: {}", path, ec.message()));
  struct stat st {};
  FilePtr f = open_trace_file(canonical.string(), st);  // a FIFO is refused, never waited on
  SnapshotKey k;
  k.canonical_path = canonical.string();
  k.device = static_cast<uint64_t>(st.st_dev);
  k.size = static_cast<uint64_t>(st.st_size);
  k.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  k.inode = static_cast<uint64_t>(st.st_ino);
  std::vector<char> buf(kEdgeBytes);
  size_t got = std::fread(buf.data(), 1, buf.size(), f.get());
  k.edge_crc = checksum(0, buf.data(), got);
  if (k.size > kEdgeBytes && std::fseek(f.get(), -static_cast<long>(kEdgeBytes), SEEK_END) == 0) {
    got = std::fread(buf.data(), 1, buf.size(), f.get());
    k.edge_crc = checksum(k.edge_crc, buf.data(), got);
  }
  return k;
}

std::string snapshot_cache_dir() {
  return jarvis_cache_dir();  // base/output_guard.h: one rule for the cache's place
}

bool snapshots_enabled() {
  const char* v = std::getenv("JARVIS_NO_SNAPSHOT");
  return !v || *v == '\0' || std::string_view(v) == "0";
}

uint64_t snapshot_cache_budget() {
  constexpr uint64_t kDefaultMiB = 4096;
  const char* v = std::getenv("JARVIS_CACHE_MAX_MB");
  uint64_t mib = kDefaultMiB;
  if (v && *v) {
    char* end = nullptr;
    errno = 0;
    unsigned long long parsed = std::strtoull(v, &end, 10);
    if (errno == 0 && *end == '\0' && parsed < (uint64_t{1} << 40)) mib = parsed;
  }
  return mib << 20;
}

// Snapshots and the files derived from their traces (trace/cache_file.h):
// one bound for them all.
static bool is_snapshot_file(const fs::path& p) {
  return p.extension() == ".jsnap" || p.extension() == ".jgraph";
}

std::vector<std::string> prune_snapshot_cache(const std::string& cache_dir, uint64_t budget_bytes,
                                              const std::string& keep) {
  return prune_cache_dir(fs::path(cache_dir) / "snapshots", budget_bytes, is_snapshot_file,
                         [&keep](const fs::path& p) { return p == fs::path(keep); });
}

std::string snapshot_path(const std::string& cache_dir, const SnapshotKey& key) {
  // The hash names the file; the trace's own name (cut short) helps a reader.
  std::string name = fs::path(key.canonical_path).filename().string().substr(0, 96);
  return (fs::path(cache_dir) / "snapshots" /
          fmt::format("{:016x}-{}.jsnap", fnv1a(key.canonical_path), name))
      .string();
}

// The whole snapshot file, mapped private and writable (copy on write) and
// populated up front: one call maps the page-cache pages instead of a fault
// per page. Snapshots are replaced by rename and never written in place, so
// the mapped bytes stay as they were while a trace uses them.
std::shared_ptr<void> map_file(int fd, uint64_t size) {
  // Populated read-only: a writable private mapping would be populated by
  // copying every page. Writes made later copy only the pages they touch.
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) throw Unusable{fmt::format("cannot map: {}", std::strerror(errno))};
  std::shared_ptr<void> mapping(p, [size](void* q) { ::munmap(q, size); });
  if (::mprotect(p, size, PROT_READ | PROT_WRITE) != 0)
    throw Unusable{fmt::format("cannot map writable: {}", std::strerror(errno))};
  // One byte of the header written with its own value: its page becomes the
  // process's own copy, and with it the mapping holds anonymous pages, which
  // makes fork() copy the mapping's page table entries. A mapping of file
  // pages alone is left out of the child's page tables (Linux refaults such
  // pages on touch), so each MCP worker mapped the whole snapshot again, a
  // fault per 16 pages: 200 MB and 3,000 faults of an x256 tile, 30-100 ms
  // of system time in every call that read the trace. The copied entries
  // cost the fork about a millisecond.
  volatile char* first = static_cast<char*>(p);
  *first = *first;
  return mapping;
}

namespace {

// A cache file open for reading (closed with this), fd -1 when there is none.
struct CacheFd {
  explicit CacheFd(int f) : fd(f) {}
  int fd;
  CacheFd(const CacheFd&) = delete;
  CacheFd& operator=(const CacheFd&) = delete;
  ~CacheFd() {
    if (fd >= 0) ::close(fd);
  }
};

// Opens `file` not through a symbolic link, and never waiting on a FIFO put
// in its place; fd -1 when it is absent or cannot be opened (logged).
CacheFd open_cache_file(const std::string& file, const SnapshotLog& log) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0 && errno != ENOENT) log(fmt::format("{}: not read: {}", file, std::strerror(errno)));
  return CacheFd{fd};
}

// The header of the cache file open at `fd` (its size in `size`): the file
// the user's own, the header whole and of the kind `check_kind` accepts (it
// throws Unusable), the payload as long as the header says. Throws Unusable.
Header read_checked_header(int fd, uint64_t& size,
                           const std::function<void(const Header&)>& check_kind) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Unusable{std::strerror(errno)};
  if (std::string why = untrusted_file_reason(st); !why.empty())
    throw Unusable{"not trusted: " + why};
  size = static_cast<uint64_t>(st.st_size);
  Header h{};
  if (size < sizeof h || ::pread(fd, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h))
    throw Unusable{fmt::format("truncated: {} bytes, shorter than the header", size)};
  check_kind(h);
  if (size - sizeof h != h.payload_bytes)
    throw Unusable{fmt::format("truncated: {} payload bytes, the header says {}", size - sizeof h,
                               h.payload_bytes)};
  return h;
}

// Writes `file` atomically, mode 0600: the header `h` (its magic, version
// and item size set by the caller), the payload `write` gives, then the
// header again with the payload's length, CRC-32 and MAC under `mac_key`.
void write_framed_file(const std::string& file, Header h, const SnapshotMacKey& mac_key,
                       const std::function<void(Writer&)>& write) {
  fs::create_directories(fs::path(file).parent_path());
  AtomicFile out(file, AtomicFile::Kind::Cache);
  FilePtr f(std::fopen(out.temp_path().c_str(), "wb"));
  if (!f) throw std::runtime_error(fmt::format("{}: {}", out.temp_path(), std::strerror(errno)));
  // The user's alone, like the cache directory (AtomicFile makes 0644 files).
  if (::fchmod(::fileno(f.get()), 0600) != 0)
    throw std::runtime_error(fmt::format("{}: {}", out.temp_path(), std::strerror(errno)));
  std::setvbuf(f.get(), nullptr, _IOFBF, 1 << 20);
  fill_random(h.mac_nonce);
  PayloadMac mac(mac_key, h.mac_nonce);
  auto put_header = [&] {
    if (std::fwrite(&h, sizeof h, 1, f.get()) != 1)
      throw std::runtime_error(fmt::format("{}: {}", out.temp_path(), std::strerror(errno)));
  };
  put_header();
  Writer w(f.get(), mac);
  try {
    write(w);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("{}: {}", out.temp_path(), e.what()));
  }
  h.payload_bytes = w.bytes();
  h.payload_crc = w.crc();
  mac.update(&h, kHeaderMacCovers);
  h.mac = mac.finish();
  if (std::fseek(f.get(), 0, SEEK_SET) != 0)
    throw std::runtime_error(fmt::format("{}: {}", out.temp_path(), std::strerror(errno)));
  put_header();
  if (std::fclose(f.release()) != 0)
    throw std::runtime_error(fmt::format("{}: {}", out.temp_path(), std::strerror(errno)));
  out.commit();
}

}  // namespace

std::optional<Trace> read_snapshot(const std::string& file, const SnapshotKey& key,
                                   const SnapshotMacKey& mac_key, const std::string& display_path,
                                   const SnapshotLog& log) {
  const CacheFd opened = open_cache_file(file, log);
  if (opened.fd < 0) return std::nullopt;
  const int fd = opened.fd;
  try {
    uint64_t size = 0;
    const Header h = read_checked_header(fd, size, [](const Header& h) {
      if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) throw Unusable{"not a jarvis snapshot"};
      if (h.version != kSnapshotVersion)
        throw Unusable{
            fmt::format("format version {}, this build reads {}", h.version, kSnapshotVersion)};
      if (h.event_size != sizeof(Event))
        throw Unusable{fmt::format("written with {}-byte events, this build has {}", h.event_size,
                                   sizeof(Event))};
    });
    std::shared_ptr<void> mapping = map_file(fd, size);
    const char* start = static_cast<const char*>(mapping.get());
    const char* payload = start + sizeof h;
    auto corrupt = [&] { return checksum(0, payload, h.payload_bytes) != h.payload_crc; };
    PayloadMac mac(mac_key, h.mac_nonce);
    Reader r(start, payload, h.payload_bytes, mac);
    std::optional<Trace> read;
    try {
      read.emplace(read_payload(r, mapping, key));
    } catch (...) {
      // A damaged payload is named as such, whatever check it failed first.
      if (corrupt()) throw Unusable{"corrupt: checksum mismatch"};
      throw;
    }
    if (r.crc() != h.payload_crc) throw Unusable{"corrupt: checksum mismatch"};
    mac.update(start, kHeaderMacCovers);
    if (!tags_equal(mac.finish(), h.mac))
      throw Unusable{
          "not trusted: its MAC does not match this cache's key (edited, or made by another "
          "cache)"};
    Trace t = std::move(*read);
    t.path = display_path;
    // Used now: the cache bound removes least recently used snapshots first.
    (void)::futimens(fd, nullptr);
    return t;
  } catch (const Unusable& u) {
    log(fmt::format("{}: ignored ({}); loading the JSON", file, u.reason));
  } catch (const std::bad_alloc&) {
    log(fmt::format("{}: ignored (corrupt: an allocation failed); loading the JSON", file));
  }
  return std::nullopt;
}

void write_snapshot(const std::string& file, const SnapshotKey& key, const SnapshotMacKey& mac_key,
                    const Trace& trace) {
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kSnapshotVersion;
  h.event_size = sizeof(Event);
  write_framed_file(file, h, mac_key, [&](Writer& w) { write_payload(w, key, trace); });
}

namespace {

// Where a load's snapshot lives and how its write is reported.
struct SnapshotPlan {
  SnapshotLog log;
  std::string dir;
  std::optional<SnapshotKey> key;  // none: no snapshot is read or written
  SnapshotMacKey mac_key{};
  std::string file;
  uint64_t budget = 0;
};

SnapshotPlan plan_snapshot(const std::string& path, const SnapshotOptions& snapshot) {
  SnapshotPlan plan;
  plan.log = snapshot.log ? snapshot.log : SnapshotLog(default_log);
  plan.dir = snapshot.cache_dir.empty() ? snapshot_cache_dir() : snapshot.cache_dir;
  if (plan.dir.empty()) return plan;
  try {
    plan.key = snapshot_key(path);
  } catch (const TraceError&) {
    return plan;  // the JSON load words the error
  }
  std::string problem;
  if (std::optional<SnapshotMacKey> mac_key = open_snapshot_cache(plan.dir, problem)) {
    plan.mac_key = *mac_key;
  } else {
    warn_once(plan.log, plan.dir, problem);
    plan.key.reset();
  }
  if (plan.key) plan.file = snapshot_path(plan.dir, *plan.key);
  plan.budget = snapshot.cache_budget_bytes ? snapshot.cache_budget_bytes : snapshot_cache_budget();
  return plan;
}

// The trace from its current snapshot, else from the JSON; then `due` holds
// the snapshot to write (none when snapshots are off, the file has no key,
// or the snapshot was read).
Trace load_planned(const std::string& path, const LoadOptions& options,
                   const SnapshotOptions& snapshot, std::optional<SnapshotPlan>& due) {
  note_input_file(path);  // never a target of this process's writes
  if (!snapshot.enabled) return load_trace(path, options, GzipInflate::Auto);
  SnapshotPlan plan = plan_snapshot(path, snapshot);
  if (plan.key) {
    if (std::optional<Trace> t =
            read_snapshot(plan.file, *plan.key, plan.mac_key, path, plan.log)) {
      if (options.progress && !options.progress(t->json_bytes, t->events.size()))
        throw TraceError(fmt::format("{}: load cancelled", path));
      return std::move(*t);
    }
  }
  Trace trace = load_trace(path, options, GzipInflate::Auto);
  if (plan.key) due = std::move(plan);
  return trace;
}

// Writes the snapshot and bounds the cache; a failure is logged, never
// thrown (the load itself succeeded).
void write_and_prune(const SnapshotPlan& plan, const Trace& trace) noexcept {
  try {
    try {
      write_snapshot(plan.file, *plan.key, plan.mac_key, trace);
      std::error_code ec;
      uint64_t written = fs::file_size(plan.file, ec);
      prune_cache_dir_after_write(fs::path(plan.dir) / "snapshots", plan.budget, ec ? 0 : written,
                                  is_snapshot_file,
                                  [&plan](const fs::path& p) { return p == fs::path(plan.file); });
    } catch (const std::exception& e) {
      plan.log(fmt::format("not written: {}", e.what()));
    }
  } catch (...) {
    // The log itself failed (out of memory): the snapshot is only a cache.
  }
}

}  // namespace

Trace load_trace(const std::string& path, const LoadOptions& options,
                 const SnapshotOptions& snapshot) {
  std::optional<SnapshotPlan> due;
  Trace trace = load_planned(path, options, snapshot, due);
  if (due) write_and_prune(*due, trace);
  return trace;
}

void SnapshotWriteBehind::start() {
  if (!pending_ || thread_.joinable()) return;
  try {
    thread_ = std::thread(pending_);  // a copy: kept for wait() if no thread starts
  } catch (const std::system_error&) {
    return;  // no thread to spare: wait() runs it
  }
  pending_ = nullptr;
}

void SnapshotWriteBehind::wait() {
  if (thread_.joinable()) thread_.join();
  if (pending_) {
    auto job = std::move(pending_);
    pending_ = nullptr;
    job();
  }
}

std::shared_ptr<const Trace> load_trace_write_behind(const std::string& path,
                                                     const LoadOptions& options,
                                                     const SnapshotOptions& snapshot,
                                                     SnapshotWriteBehind& writer) {
  writer.wait();  // one write per writer
  std::optional<SnapshotPlan> due;
  auto trace = std::make_shared<const Trace>(load_planned(path, options, snapshot, due));
  if (!due) return trace;
  // The job holds the trace: it outlives the caller's copy if need be.
  writer.pending_ = [plan = std::move(*due), trace] { write_and_prune(plan, *trace); };
  if (writer.when_ == SnapshotWriteBehind::Start::WithLoad) writer.start();
  return trace;
}

std::shared_ptr<const Trace> load_trace_write_behind(const std::string& path,
                                                     SnapshotWriteBehind& writer) {
  SnapshotOptions snapshot;
  snapshot.enabled = snapshots_enabled();
  return load_trace_write_behind(path, LoadOptions{}, snapshot, writer);
}

// ---------------------------------------------------------------- cache files

namespace {

class CacheWriterOf final : public CacheFileWriter {
 public:
  explicit CacheWriterOf(Writer& w) : w_(w) {}
  void raw(const void* p, size_t n) override { w_.raw(p, n); }
  void align(size_t alignment) override { w_.align(alignment); }

 private:
  Writer& w_;
};

class CacheReaderOf final : public CacheFileReader {
 public:
  CacheReaderOf(Reader& r, std::shared_ptr<void> mapping) : r_(r), mapping_(std::move(mapping)) {}
  const char* take(uint64_t n) override { return r_.take(n); }
  void align(size_t alignment) override { r_.align(alignment); }
  uint64_t left() const override { return r_.left(); }
  std::shared_ptr<void> mapping() const override { return mapping_; }

 private:
  Reader& r_;
  std::shared_ptr<void> mapping_;
};

}  // namespace

void CacheFileReader::refuse(std::string why) {
  throw Unusable{std::move(why)};
}

std::optional<CacheFilePlan> plan_cache_file(const std::string& trace_path,
                                             std::string_view extension,
                                             const SnapshotOptions& options) {
  if (!snapshots_enabled()) return std::nullopt;
  SnapshotPlan snapshot = plan_snapshot(trace_path, options);
  if (!snapshot.key) return std::nullopt;
  CacheFilePlan plan;
  plan.dir = snapshot.dir;
  plan.file = fs::path(snapshot.file).replace_extension(extension).string();
  plan.key = *snapshot.key;
  plan.mac_key = snapshot.mac_key;
  plan.budget = snapshot.budget;
  plan.log = snapshot.log;
  return plan;
}

void write_cache_file(const CacheFilePlan& plan, const CacheFileKind& kind,
                      const std::function<void(CacheFileWriter&)>& write) noexcept {
  try {
    try {
      Header h{};
      std::memcpy(h.magic, kind.magic, sizeof h.magic);
      h.version = kind.version;
      h.event_size = kind.item_size;
      write_framed_file(plan.file, h, plan.mac_key, [&](Writer& w) {
        CacheWriterOf writer(w);
        write(writer);
      });
      std::error_code ec;
      const uint64_t written = fs::file_size(plan.file, ec);
      prune_cache_dir_after_write(fs::path(plan.dir) / "snapshots", plan.budget, ec ? 0 : written,
                                  is_snapshot_file,
                                  [&plan](const fs::path& p) { return p == fs::path(plan.file); });
    } catch (const std::exception& e) {
      plan.log(fmt::format("{}: not written: {}", plan.file, e.what()));
    }
  } catch (...) {
    // The log itself failed (out of memory): the file is only a cache.
  }
}

bool read_cache_file(const CacheFilePlan& plan, const CacheFileKind& kind,
                     const std::function<void(CacheFileReader&)>& read) {
  const std::string& file = plan.file;
  const CacheFd opened = open_cache_file(file, plan.log);
  if (opened.fd < 0) return false;
  const int fd = opened.fd;
  try {
    uint64_t size = 0;
    const Header h = read_checked_header(fd, size, [&kind](const Header& h) {
      if (std::memcmp(h.magic, kind.magic, sizeof h.magic) != 0)
        throw Unusable{"not a file of this kind"};
      if (h.version != kind.version)
        throw Unusable{
            fmt::format("format version {}, this build reads {}", h.version, kind.version)};
      if (h.event_size != kind.item_size)
        throw Unusable{fmt::format("written with another layout ({}, this build {})", h.event_size,
                                   kind.item_size)};
    });
    std::shared_ptr<void> mapping = map_file(fd, size);
    const char* start = static_cast<const char*>(mapping.get());
    PayloadMac mac(plan.mac_key, h.mac_nonce);
    Reader r(start, start + sizeof h, h.payload_bytes, mac);
    // Checked whole before any of it is read.
    r.checksum_to_end();
    if (r.crc() != h.payload_crc) throw Unusable{"corrupt: checksum mismatch"};
    mac.update(start, kHeaderMacCovers);
    if (!tags_equal(mac.finish(), h.mac))
      throw Unusable{
          "not trusted: its MAC does not match this cache's key (edited, or made by another "
          "cache)"};
    CacheReaderOf reader(r, mapping);
    read(reader);
    (void)::futimens(fd, nullptr);  // used now: the cache bound removes the least recent first
    return true;
  } catch (const Unusable& u) {
    plan.log(fmt::format("{}: ignored ({})", file, u.reason));
  } catch (const std::bad_alloc&) {
    plan.log(fmt::format("{}: ignored (corrupt: an allocation failed)", file));
  }
  return false;
}

}  // namespace jarvis
