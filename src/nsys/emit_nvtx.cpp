#include "nsys/emit_nvtx.h"

#include <algorithm>
#include <charconv>

namespace jarvis::nsys {

namespace {

// The integer after `key` ("op_id = ") in `text`, or -1.
int64_t int_after(std::string_view text, std::string_view key) {
  size_t at = text.find(key);
  if (at == std::string_view::npos) return -1;
  const char* first = text.data() + at + key.size();
  int64_t value = -1;
  auto [ptr, ec] = std::from_chars(first, text.data() + text.size(), value);
  if (ec != std::errc() || ptr == first) return -1;
  return value;
}

void skip_spaces(std::string_view s, size_t& i) {
  while (i < s.size() && s[i] == ' ') ++i;
}

// "[[8, 16], [], [3]]" at s[i]: one list of ints per input.
bool parse_sizes(std::string_view s, size_t i, std::vector<std::vector<int64_t>>& out) {
  if (i >= s.size() || s[i] != '[') return false;
  ++i;
  skip_spaces(s, i);
  if (i < s.size() && s[i] == ']') return true;
  while (i < s.size()) {
    skip_spaces(s, i);
    if (i >= s.size() || s[i] != '[') return false;
    ++i;
    std::vector<int64_t> dims;
    skip_spaces(s, i);
    while (i < s.size() && s[i] != ']') {
      int64_t v = 0;
      auto [ptr, ec] = std::from_chars(s.data() + i, s.data() + s.size(), v);
      if (ec != std::errc()) return false;
      dims.push_back(v);
      i = static_cast<size_t>(ptr - s.data());
      skip_spaces(s, i);
      if (i < s.size() && s[i] == ',') ++i;
      skip_spaces(s, i);
    }
    if (i >= s.size()) return false;
    ++i;  // ']'
    out.push_back(std::move(dims));
    skip_spaces(s, i);
    if (i < s.size() && s[i] == ',') {
      ++i;
      continue;
    }
    return i < s.size() && s[i] == ']';
  }
  return false;
}

}  // namespace

std::optional<EmitNvtxText> parse_emit_nvtx(std::string_view text) {
  // The name ends where emit_nvtx's first field starts (a name may hold ", ").
  size_t comma = std::min(text.find(", seq = "), text.find(", op_id = "));
  if (comma == std::string_view::npos || comma == 0) return std::nullopt;
  std::string_view rest = text.substr(comma);
  EmitNvtxText out;
  out.op_id = int_after(rest, ", op_id = ");
  if (out.op_id < 0) return std::nullopt;
  out.name = text.substr(0, comma);
  out.seq = int_after(rest, ", seq = ");
  constexpr std::string_view kSizes = ", sizes = ";
  if (size_t at = rest.find(kSizes); at != std::string_view::npos) {
    std::vector<std::vector<int64_t>> sizes;
    if (parse_sizes(rest, at + kSizes.size(), sizes)) out.sizes = std::move(sizes);
  }
  return out;
}

}  // namespace jarvis::nsys
