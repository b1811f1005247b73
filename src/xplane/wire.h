// Private to src/xplane: the protobuf wire reader both hand-written decoders
// use (wire.cpp: XSpace; hlo.cpp: the HloProto of the /host:metadata plane).
// Every varint and length is checked against the bytes left, so a truncated
// or foreign input ends in a DecodeError, never a read past the buffer.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace jarvis {
class ExpansionBudget;
}
namespace jarvis::xplane {
struct Space;
}

namespace jarvis::xplane::wire {

// What the decoders throw; load_space turns it into a TraceError with the file.
struct DecodeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5 };

struct Field {
  uint32_t number = 0;
  uint32_t type = 0;
  uint64_t varint = 0;     // kVarint / kFixed64 / kFixed32 value
  std::string_view bytes;  // kLength payload
};

// Reads the fields of one message; `what` (a message name with static
// storage) prefixes every error.
class Reader {
 public:
  Reader(std::string_view bytes, const char* what)
      : p_(bytes.data()), end_(p_ + bytes.size()), what_(what) {}
  bool done() const { return p_ == end_; }

  Field next() {
    Field f;
    uint64_t key = varint();
    f.number = static_cast<uint32_t>(key >> 3);
    f.type = static_cast<uint32_t>(key & 7);
    if (f.number == 0 || key >> 32) fail("a field number of 0 or beyond 2^29");
    switch (f.type) {
      case kVarint:
        f.varint = varint();
        break;
      case kFixed64:
        f.varint = fixed(8);
        break;
      case kFixed32:
        f.varint = fixed(4);
        break;
      case kLength: {
        uint64_t n = varint();
        if (n > static_cast<uint64_t>(end_ - p_)) fail("a length past the end of the data");
        f.bytes = std::string_view(p_, static_cast<size_t>(n));
        p_ += n;
        break;
      }
      default:
        fail(fmt::format("wire type {} (groups or garbage)", f.type));
    }
    return f;
  }

  // The next bytes as one varint (the elements of a packed repeated field).
  uint64_t read_varint() { return varint(); }

  [[noreturn]] void fail(const std::string& why) const {
    throw DecodeError(fmt::format("{}: {}", what_, why));
  }

 private:
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) fail("a varint cut off by the end of the data");
      auto c = static_cast<uint8_t>(*p_++);
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return v;
    }
    fail("a varint longer than 10 bytes");
  }
  uint64_t fixed(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) fail("a fixed-size value cut off by the end");
    uint64_t v = 0;
    std::memcpy(&v, p_, n);  // little-endian hosts (x86-64, aarch64)
    p_ += n;
    return v;
  }

  const char* p_;
  const char* end_;
  const char* what_;
};

inline void expect(const Field& f, uint32_t type, const Reader& r, const char* field) {
  if (f.type != type) r.fail(fmt::format("field {} has wire type {}, not {}", field, f.type, type));
}

// A repeated int64 field, packed (one length-delimited run of varints, what
// proto3 writers emit) or not (one varint per field): appends to `out`.
void append_int64s(const Field& f, const Reader& r, const char* field, std::vector<int64_t>& out);

// Appends the planes and strings of `bytes` to `space`, charging what it
// builds to `budget`. Throws DecodeError (TraceError past the budget).
void decode_space(std::string_view bytes, Space& space, ExpansionBudget& budget);

// Whether `prefix` (the first bytes of a file of `total_size` bytes) starts
// like an XSpace: a plane field whose length fits and whose first fields
// decode as XPlane fields, or a hostname / error / warning string.
bool looks_like_space(std::string_view prefix, uint64_t total_size);

}  // namespace jarvis::xplane::wire
