// LIKE, GLOB and instr() in time linear in their text, registered over
// SQLite's own on every query connection. SQLite's patternCompare backtracks
// on each '%' / '*' (a pattern of k wildcards costs up to n^k steps on a text
// of n bytes) and its instr() compares the needle at every offset (n * m):
// a single call on values within the length limit ran for minutes between
// two progress-handler callbacks, where no timeout or cancellation can
// reach it (issue 63 point 2). Here LIKE and GLOB patterns are translated to
// RE2 (linear in the text, compiled once per statement through SQLite's
// auxdata) and instr() searches with glibc's memmem (two-way: linear).
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

// Registers like(2), like(3), glob(2) and instr(2) on `db`.
void register_linear_text_functions(sqlite3* db);

// The RE2 pattern (full match) for a LIKE pattern with optional escape
// character, or a GLOB pattern; nullopt when SQLite's matcher would see a
// malformed pattern (an unterminated GLOB class): those never match.
std::optional<std::string> like_to_regex(std::string_view pattern, std::optional<char32_t> escape);
std::optional<std::string> glob_to_regex(std::string_view pattern);

}  // namespace jarvis::sql
