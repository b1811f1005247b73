// Durations for people to read: microseconds below a millisecond, else
// milliseconds (then seconds), so a saving prints as "67.8-90.4 ms" and not
// "67776.0-90368.0 us". Machine outputs (JSON, CSV) keep their microsecond
// fields; only printed text goes through here.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>

namespace jarvis {

struct DurationUnit {
  double divisor;
  const char* name;
};

// The unit for a value (or a range, by its larger end) in microseconds,
// chosen after rounding at the smaller unit's one decimal: 999.96 us prints
// as "1.00 ms", never "1000.0 us".
inline DurationUnit duration_unit(double us) {
  double a = std::fabs(us);
  if (std::round(a / 1e2) / 10 >= 1e3) return {1e6, "s"};
  if (std::round(a * 10) / 10 >= 1e3) return {1e3, "ms"};
  return {1.0, "us"};
}

// Decimals for a value in its unit: two below 10 ms (or s), so 1.02 ms keeps
// the precision 1020.4 us had; one otherwise.
inline int duration_decimals(const DurationUnit& u, double value) {
  return u.divisor > 1 && std::fabs(value) < 10 ? 2 : 1;
}

inline std::string duration_text(double us) {
  DurationUnit u = duration_unit(us);
  double v = us / u.divisor;
  return fmt::format("{:.{}f} {}", v, duration_decimals(u, v), u.name);
}

// "LOW-HIGH UNIT", both ends in the unit and precision of the larger.
inline std::string duration_range_text(double low_us, double high_us) {
  double larger = std::fabs(high_us) > std::fabs(low_us) ? high_us : low_us;
  DurationUnit u = duration_unit(larger);
  int decimals = duration_decimals(u, larger / u.divisor);
  return fmt::format("{:.{}f}-{:.{}f} {}", low_us / u.divisor, decimals, high_us / u.divisor,
                     decimals, u.name);
}

}  // namespace jarvis
