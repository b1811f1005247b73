// Hashes of keys made of several integers (ids, pids, stream numbers) for the
// unordered containers that index them. One mixing step for all of them:
// each part is folded in and multiplied by 2^64 / golden ratio (an odd
// constant whose product spreads every input bit over the high bits), and
// the high bits are folded down at the end, since libstdc++ reduces a hash
// modulo a prime bucket count and so also reads the low ones.
#pragma once

#include <cstddef>
#include <cstdint>

namespace jarvis {

inline constexpr uint64_t kHashMixStart = 0;

// The hash so far with one more part of the key folded in.
constexpr uint64_t hash_mix(uint64_t h, uint64_t part) noexcept {
  return (h ^ part) * 0x9E3779B97F4A7C15ull;
}

// The container's hash of a finished mix.
constexpr size_t hash_finish(uint64_t h) noexcept {
  return static_cast<size_t>(h ^ (h >> 29));
}

// The hash of a key of the given parts, in order.
template <class... Parts>
constexpr size_t hash_of(Parts... parts) noexcept {
  uint64_t h = kHashMixStart;
  ((h = hash_mix(h, static_cast<uint64_t>(parts))), ...);
  return hash_finish(h);
}

}  // namespace jarvis
