// Files jarvis derives from a trace and keeps beside its snapshot in the
// cache (the step model's dependency graph: critical_path/graph_file.h), so
// that a later process on the same trace reads them instead of deriving them
// again (issue 75). They are written and trusted as snapshots are
// (trace/snapshot.h): the same 64-byte header with their own magic and
// version, a CRC-32 and a keyed MAC under the cache's key over the payload
// and header, files of the user's own only, written atomically mode 0600,
// named after the trace's snapshot with their own extension, and bounded
// with the snapshots (least recently used first). Unlike a snapshot's, the
// whole payload's checksum and MAC are checked before a reader sees a byte.
//
// A kind's reader compares what the file says it was derived from (the
// trace's snapshot key, the build, the settings) and refuses a file that does
// not match (CacheFileReader::refuse): it is logged, ignored and rewritten by
// the caller, like a stale snapshot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "trace/mappable_vector.h"
#include "trace/snapshot.h"

namespace jarvis {

struct CacheFileKind {
  char magic[8];
  uint32_t version;
  // A check of the kind's raw arrays' layout (e.g. the sizes of their
  // element types): a file of another layout is refused.
  uint32_t item_size;
};

class CacheFileWriter {
 public:
  virtual void raw(const void* p, size_t n) = 0;
  // Zero bytes up to the next multiple of `alignment` of the file offset.
  virtual void align(size_t alignment) = 0;
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
  // A vector's elements (std::vector or MappableVector), raw.
  template <class Vector>
  void array(const Vector& v) {
    using T = std::remove_cvref_t<decltype(*v.data())>;
    static_assert(std::is_trivially_copyable_v<T>);
    u64(v.size());
    align(alignof(T));
    raw(v.data(), v.size() * sizeof(T));
  }

 protected:
  ~CacheFileWriter() = default;
};

class CacheFileReader {
 public:
  // The next n bytes of the payload (refused past its end).
  virtual const char* take(uint64_t n) = 0;
  // Skips the writer's padding up to the next multiple of `alignment`.
  virtual void align(size_t alignment) = 0;
  virtual uint64_t left() const = 0;
  // Ends the read: the file is not used, `why` is logged ("stale: ...",
  // "corrupt: ...").
  [[noreturn]] static void refuse(std::string why);
  template <class T>
  T pod() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  uint64_t u64() { return pod<uint64_t>(); }
  // A count of items of at least `min_bytes` each, checked against what is left.
  uint64_t count(uint64_t min_bytes) {
    const uint64_t n = u64();
    if (min_bytes && n > left() / min_bytes) refuse("corrupt: a count exceeds the data");
    return n;
  }
  std::string str() {
    const uint64_t n = count(1);
    return std::string(take(n), n);
  }
  template <class T>
  void array(std::vector<T>& out) {
    static_assert(std::is_trivially_copyable_v<T>);
    const uint64_t n = count(sizeof(T));
    align(alignof(T));
    const auto* first = reinterpret_cast<const T*>(take(n * sizeof(T)));
    out.assign(first, first + n);
  }
  // The same array used in place: a view of the mapped file (private, copy
  // on write), which the view keeps mapped.
  template <class T>
  void array(MappableVector<T>& out) {
    const uint64_t n = count(sizeof(T));
    align(alignof(T));
    auto* first = reinterpret_cast<T*>(const_cast<char*>(take(n * sizeof(T))));
    out = MappableVector<T>::view(mapping(), first, n);
  }
  // The file's mapping, which views of it keep alive.
  virtual std::shared_ptr<void> mapping() const = 0;

 protected:
  ~CacheFileReader() = default;
};

// Where the cache file `extension` (".jgraph") of the trace at `trace_path`
// lives, with the trace's snapshot key and the cache's MAC key. Nullopt when
// snapshots are off (JARVIS_NO_SNAPSHOT), the cache cannot be used (the
// reason logged once, as for snapshots) or the trace's file cannot be keyed.
struct CacheFilePlan {
  std::string dir, file;
  SnapshotKey key;
  SnapshotMacKey mac_key{};
  uint64_t budget = 0;
  SnapshotLog log;
};
std::optional<CacheFilePlan> plan_cache_file(const std::string& trace_path,
                                             std::string_view extension,
                                             const SnapshotOptions& options = {});

// Writes the file atomically (mode 0600): the header of `kind`, the payload
// `write` gives, its checksum and MAC; then bounds the cache. A failure is
// logged, never thrown (the file is only a cache).
void write_cache_file(const CacheFilePlan& plan, const CacheFileKind& kind,
                      const std::function<void(CacheFileWriter&)>& write) noexcept;

// Reads the file through `read` when it is the user's own, of `kind`, whole,
// and its checksum and MAC (under plan.mac_key) match; false, with the reason
// logged, when it is absent, not usable, or `read` refused it.
bool read_cache_file(const CacheFilePlan& plan, const CacheFileKind& kind,
                     const std::function<void(CacheFileReader&)>& read);

}  // namespace jarvis
