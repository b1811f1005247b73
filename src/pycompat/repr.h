// Python's repr() of floats and strings, and the JSON string escaping of
// Python's json module: the texts TraceLens's tables and JSON files carry.
#pragma once

#include <string>
#include <string_view>

namespace jarvis::pycompat {

// Python's repr() of a float: shortest round-trip digits, fixed notation for
// exponents in [-4, 16), scientific otherwise, always with a '.0' or exponent
// (repr(0.1 + 0.2) == '0.30000000000000004', repr(1e16) == '1e+16').
std::string py_float_repr(double v);

// Python's repr() of a str: single quotes unless the text contains a single
// quote and no double quote; backslash escapes for quotes and control chars.
std::string py_str_repr(std::string_view s);

// Appends `s` as a JSON string literal the way json.dumps writes it: quotes,
// backslash, \n \r \t \b \f as short escapes, other control characters as
// \u00XX. With ensure_ascii (json.dumps' default) every non-ASCII character
// of the UTF-8 text becomes \uXXXX (a surrogate pair above U+FFFF; an invalid
// byte becomes \ufffd); without it, bytes from 0x80 up are copied.
void append_json_string(std::string& out, std::string_view s, bool ensure_ascii);

}  // namespace jarvis::pycompat
