// bit_count8 against a bit-by-bit count of every 8-bit value.
#include <doctest/doctest.h>

#include "base/bits.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

TEST_CASE("bit_count8 counts the set bits of every 8-bit value") {
  for (unsigned v = 0; v < 256; ++v) {
    unsigned expected = 0;
    for (unsigned bit = 0; bit < 8; ++bit) expected += (v >> bit) & 1u;
    CHECK(jarvis::bit_count8(static_cast<uint8_t>(v)) == expected);
  }
  static_assert(jarvis::bit_count8(0xff) == 8);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
