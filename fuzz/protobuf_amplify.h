// A size-amplifying mutation for protobuf inputs (libFuzzer custom mutator
// helper). Random byte edits rarely grow a protobuf the way an attacker does:
// one field repeated a hundred thousand times, a count varint set to 2^20, a
// string grown to a megabyte while everything that references it stays
// small. This walks the wire format without a schema (a length-delimited
// field whose payload parses as fields is taken for a message), picks one
// field at any depth and
//   * repeats it up to 4,096 times in place (events, stats, operands, iota
//     lists: "the same thing referenced far more often than stored"),
//   * or sets a varint to a large value (counts, group sizes, dimensions),
//   * or grows a length-delimited payload by repeating its bytes,
// then re-encodes every enclosing length. The result is cut to `max_size`.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace jarvis::fuzz {

struct WireField {
  size_t begin = 0, end = 0;        // the whole field: key .. end of value
  size_t value_begin = 0;           // after the key (varint) or the length (bytes)
  uint32_t type = 0;                // 0 varint, 1 fixed64, 2 bytes, 5 fixed32
  std::vector<WireField> children;  // type 2 whose payload parses as fields
};

inline bool read_varint(std::string_view s, size_t& k, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && k < s.size(); shift += 7) {
    auto c = static_cast<uint8_t>(s[k++]);
    v |= static_cast<uint64_t>(c & 0x7f) << shift;
    if (!(c & 0x80)) return true;
  }
  return false;
}

inline void write_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

// The fields of `s[begin, end)`; false when it does not parse as fields.
inline bool parse_fields(std::string_view s, size_t begin, size_t end, int depth,
                         std::vector<WireField>& out) {
  size_t k = begin;
  while (k < end) {
    WireField f;
    f.begin = k;
    uint64_t key = 0;
    if (!read_varint(s.substr(0, end), k, key) || (key >> 3) == 0) return false;
    f.type = static_cast<uint32_t>(key & 7);
    uint64_t v = 0;
    switch (f.type) {
      case 0:
        f.value_begin = k;
        if (!read_varint(s.substr(0, end), k, v)) return false;
        break;
      case 1:
        f.value_begin = k;
        if (end - k < 8) return false;
        k += 8;
        break;
      case 5:
        f.value_begin = k;
        if (end - k < 4) return false;
        k += 4;
        break;
      case 2:
        if (!read_varint(s.substr(0, end), k, v) || v > end - k) return false;
        f.value_begin = k;
        k += v;
        if (depth < 12 && v > 0) {
          std::vector<WireField> inner;
          if (parse_fields(s, f.value_begin, k, depth + 1, inner)) f.children = std::move(inner);
        }
        break;
      default:
        return false;
    }
    f.end = k;
    out.push_back(std::move(f));
  }
  return true;
}

// The field's key (number and wire type) as `s` encodes it.
inline std::string_view key_bytes(std::string_view s, const WireField& f) {
  size_t k = f.begin;
  uint64_t key = 0;
  read_varint(s, k, key);
  return s.substr(f.begin, k - f.begin);
}

// `s` with the field at `path` (indices into children) replaced by
// `replacement` (whole fields), every enclosing length re-encoded.
inline std::string splice(std::string_view s, const std::vector<WireField>& level,
                          const std::vector<size_t>& path, size_t depth,
                          const std::string& replacement) {
  const WireField& f = level[path[depth]];
  std::string middle;
  if (depth + 1 == path.size()) {
    middle = replacement;
  } else {
    std::string inner = splice(s, f.children, path, depth + 1, replacement);
    // inner is the payload rewritten: rebuild key + length + payload.
    middle += key_bytes(s, f);
    write_varint(middle, inner.size());
    middle += inner;
  }
  // The rewritten level: what precedes and follows the field inside it.
  const size_t level_begin = level.front().begin, level_end = level.back().end;
  return std::string(s.substr(level_begin, f.begin - level_begin)) + middle +
         std::string(s.substr(f.end, level_end - f.end));
}

inline size_t amplify(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
  std::string_view s(reinterpret_cast<const char*>(data), size);
  std::vector<WireField> top;
  if (size == 0 || !parse_fields(s, 0, size, 0, top) || top.empty()) return 0;
  std::mt19937 rng(seed);
  // A random path down the tree.
  std::vector<size_t> path;
  const std::vector<WireField>* level = &top;
  while (true) {
    path.push_back(std::uniform_int_distribution<size_t>(0, level->size() - 1)(rng));
    const WireField& f = (*level)[path.back()];
    if (f.children.empty() || rng() % 3 == 0) break;
    level = &f.children;
  }
  const WireField& f = (*level)[path.back()];
  const std::string whole(s.substr(f.begin, f.end - f.begin));
  std::string replacement;
  switch (rng() % 3) {
    case 0: {  // repeat the field
      const size_t times = size_t{1} << (rng() % 13);
      for (size_t k = 0; k < times && replacement.size() < max_size; ++k) replacement += whole;
      break;
    }
    case 1: {  // a large varint, when it is one
      if (f.type != 0) return 0;
      static constexpr uint64_t kLarge[] = {
          1u << 16, 1u << 20, 1u << 24, 1u << 31, (uint64_t{1} << 40), ~uint64_t{0} >> 1};
      replacement += key_bytes(s, f);
      write_varint(replacement, kLarge[rng() % 6]);
      break;
    }
    default: {  // grow a payload by repeating it
      if (f.type != 2 || f.end == f.value_begin) return 0;
      std::string_view payload = s.substr(f.value_begin, f.end - f.value_begin);
      std::string grown;
      const size_t target = std::min<size_t>(max_size / 2, payload.size() << (1 + rng() % 10));
      while (grown.size() < target) grown += payload;
      replacement += key_bytes(s, f);
      write_varint(replacement, grown.size());
      replacement += grown;
      break;
    }
  }
  std::string out = splice(s, top, path, 0, replacement);
  if (out.size() > max_size) out.resize(max_size);
  std::copy(out.begin(), out.end(), data);
  return out.size();
}

}  // namespace jarvis::fuzz
