// ASCII text helpers shared by every layer: Python's str.lower() restricted
// to ASCII (what the TraceLens name matching relies on, byte-for-byte on
// UTF-8 text), a case-insensitive compare, trimming and UTF-8 encoding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace jarvis::pycompat {

// ASCII lower case of `s`: A-Z → a-z, every other byte kept.
std::string ascii_lower(std::string_view s);
// Lower-cases `s` in place.
void ascii_lower_in_place(std::string& s);
// a == b ignoring ASCII case.
bool ascii_iequals(std::string_view a, std::string_view b);
// `part` occurs in `text` ignoring ASCII case (an empty part always does).
bool ascii_icontains(std::string_view text, std::string_view part);
// `s` without leading and trailing white space (isspace).
std::string_view ascii_trim(std::string_view s);

// Appends the UTF-8 encoding of code point `cp` (as Python's chr(cp).encode()).
void append_utf8(std::string& out, uint32_t cp);

}  // namespace jarvis::pycompat
