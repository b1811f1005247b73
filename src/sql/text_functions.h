// LIKE, GLOB, instr(), replace() and trim() with a character set (also
// ltrim, rtrim) in time about linear in their text, registered over
// SQLite's own on every query connection. SQLite's patternCompare backtracks
// on each '%' / '*' (a pattern of k wildcards costs up to n^k steps on a text
// of n bytes) and its instr() compares the needle at every offset (n * m):
// a single call on values within the length limit ran for minutes between
// two progress-handler callbacks, where no timeout or cancellation can
// reach it (issue 63 point 2). Here LIKE and GLOB patterns are translated to
// RE2 (linear in the text, compiled once per statement through SQLite's
// auxdata), instr() and replace() search with glibc's memmem (two-way:
// linear), and trim() looks each character up in a table of its set (at
// most once per distinct character length of the set: one to four for
// UTF-8 text) instead of comparing every character of the set at each step
// (issue 74 point 1: a 200 KB set over a 4 MB value took minutes).
// Results equal SQLite's on every input (tests/sql/test_sql_text_functions.cpp
// compares them on generated patterns): LIKE folds ASCII letters only, '_'
// and '?' take one UTF-8 character, ESCAPE works as in SQLite, a GLOB class
// ([a-z], [^...], ']' first) as in SQLite.
#pragma once

#include <sqlite3.h>

#include <optional>
#include <string>
#include <string_view>

namespace jarvis::sql {

// Registers like(2), like(3), glob(2), instr(2), replace(3), trim(2),
// ltrim(2) and rtrim(2) on `db`.
void register_linear_text_functions(sqlite3* db);

// The RE2 pattern (full match) for a LIKE pattern with optional escape
// character, or a GLOB pattern; nullopt when SQLite's matcher would see a
// malformed pattern (an unterminated GLOB class): those never match.
std::optional<std::string> like_to_regex(std::string_view pattern, std::optional<char32_t> escape);
std::optional<std::string> glob_to_regex(std::string_view pattern);

}  // namespace jarvis::sql
