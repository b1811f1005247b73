// Bit counts without the POPCNT instruction. The binary targets baseline
// x86-64, where __builtin_popcount is a call into libgcc's table-driven
// __popcountdi2; the event store counts the bits of an 8-bit mask on every
// sparse-id lookup, which a 256-entry table answers inline.
#pragma once

#include <array>
#include <cstdint>

namespace jarvis {

namespace detail {
constexpr std::array<uint8_t, 256> make_bit_counts() {
  std::array<uint8_t, 256> counts{};
  for (unsigned v = 1; v < 256; ++v) counts[v] = static_cast<uint8_t>(counts[v >> 1] + (v & 1u));
  return counts;
}
inline constexpr std::array<uint8_t, 256> kBitCounts = make_bit_counts();
}  // namespace detail

// Number of set bits of an 8-bit value.
constexpr unsigned bit_count8(uint8_t v) {
  return detail::kBitCounts[v];
}

}  // namespace jarvis
