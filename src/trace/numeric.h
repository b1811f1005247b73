// Range-checked conversions of trace numbers. A cast of a double outside the
// int64 range is undefined behaviour in C++, and trace values ("id": 1e300,
// a shape of 2^70 written as a float) are attacker-controlled, so every
// double -> integer conversion of a trace value goes through these.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

namespace jarvis {

// True when d truncated toward zero fits in int64 (NaN and infinities do not).
inline bool fits_int64(double d) {
  // 2^63 is exactly representable; int64 holds [-2^63, 2^63).
  return std::isfinite(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0;
}

// Python's int(d): truncation toward zero; nullopt when out of range.
inline std::optional<int64_t> truncate_to_int64(double d) {
  if (!fits_int64(d)) return std::nullopt;
  return static_cast<int64_t>(d);
}

// d as int64 when it is an integer value in range; nullopt otherwise.
inline std::optional<int64_t> exact_int64(double d) {
  auto t = truncate_to_int64(d);
  if (!t || static_cast<double>(*t) != d) return std::nullopt;
  return t;
}

}  // namespace jarvis
