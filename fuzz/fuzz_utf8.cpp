// libFuzzer target for the UTF-8 repair every output relies on
// (base/utf8.h), against a decoder written here from RFC 3629's table
// (code point ranges, not base/utf8.cpp's byte bounds): valid_utf8 keeps each
// valid sequence and puts U+FFFD for each byte that starts none; its result
// is valid and repairs to itself; is_valid_utf8 (simdjson's check) agrees
// with the decoder on every input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/utf8.h"

namespace {

// The length of the well-formed sequence at s[i] by RFC 3629 section 4, or 0:
// decode the code point, then check it is the shortest form, not a
// surrogate, and at most U+10FFFF.
size_t rfc3629_sequence(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(s[k])); };
  const uint32_t lead = b(i);
  size_t n;
  uint32_t cp;
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) {
    n = 2;
    cp = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    n = 3;
    cp = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    n = 4;
    cp = lead & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  static const uint32_t kShortest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kShortest[n]) return 0;             // overlong
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;  // surrogate
  if (cp > 0x10FFFF) return 0;                 // past Unicode
  return n;
}

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_utf8: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string expected;
  bool valid = true;
  for (size_t i = 0; i < in.size();) {
    if (size_t n = rfc3629_sequence(in, i)) {
      expected.append(in.substr(i, n));
      i += n;
    } else {
      expected.append("\xEF\xBF\xBD");
      valid = false;
      ++i;
    }
  }
  if (jarvis::is_valid_utf8(in) != valid) finding("is_valid_utf8 disagrees with RFC 3629");
  const std::string repaired = jarvis::valid_utf8(in);
  if (repaired != expected) finding("valid_utf8 differs from the RFC 3629 repair");
  if (!jarvis::is_valid_utf8(repaired)) finding("valid_utf8's result is not valid");
  if (jarvis::valid_utf8(repaired) != repaired) finding("valid_utf8 does not keep valid text");
  return 0;
}
