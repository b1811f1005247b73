// Private to src/xplane: the XSpace wire decoder (wire.cpp).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace jarvis::xplane {
struct Space;
}

namespace jarvis::xplane::wire {

// What the decoder throws; load_space turns it into a TraceError with the file.
struct DecodeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Appends the planes and strings of `bytes` to `space`. Throws DecodeError.
void decode_space(std::string_view bytes, Space& space);

// Whether `prefix` (the first bytes of a file of `total_size` bytes) starts
// like an XSpace: a plane field whose length fits and whose first fields
// decode as XPlane fields, or a hostname / error / warning string.
bool looks_like_space(std::string_view prefix, uint64_t total_size);

}  // namespace jarvis::xplane::wire
