// Text from a binary input (protobuf strings of an XSpace, SQLite TEXT of an
// Nsight export) is not promised to be UTF-8, while every reply jarvis sends
// is JSON, which must be. The readers make such text valid once, at ingest:
// each invalid byte becomes U+FFFD (the replacement character), so every tool
// prints the same name and none fails on it later.
#pragma once

#include <string>
#include <string_view>

namespace jarvis {

// `s` when it is valid UTF-8 (the common case: one vectorised check), else a
// copy with each byte that does not start a valid sequence replaced by
// U+FFFD. Overlong forms, surrogates and code points past U+10FFFF are
// invalid, as in RFC 3629.
std::string valid_utf8(std::string_view s);

// Whether `s` is valid UTF-8 (the same rule, one vectorised check, no copy).
bool is_valid_utf8(std::string_view s);

}  // namespace jarvis
