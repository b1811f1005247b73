#include "sql/text_functions.h"

#include <re2/re2.h>
#include <string.h>

#include <memory>
#include <vector>

#include <fmt/format.h>

namespace jarvis::sql {

namespace {

// SQLite's sqlite3Utf8Read: a byte below 0xC0 is one character; a lead byte
// takes every continuation byte after it; overlong, surrogate and
// non-characters read as U+FFFD. Advances `k`; 0 at the end.
char32_t read_utf8(std::string_view s, size_t& k) {
  if (k >= s.size()) return 0;
  auto c = static_cast<unsigned char>(s[k++]);
  if (c < 0xC0) return c;
  static constexpr unsigned char kLead[] = {
      0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c,
      0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19,
      0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
      0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x00, 0x01, 0x02, 0x03,
      0x04, 0x05, 0x06, 0x07, 0x00, 0x01, 0x02, 0x03, 0x00, 0x01, 0x00, 0x00};
  uint32_t v = kLead[c - 0xC0];
  while (k < s.size() && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80)
    v = (v << 6) + (0x3F & static_cast<unsigned char>(s[k++]));
  if (v < 0x80 || (v & 0xFFFFF800) == 0xD800 || (v & 0xFFFFFFFE) == 0xFFFE) v = 0xFFFD;
  return static_cast<char32_t>(v);
}

void append_code_point(std::string& re, char32_t c) {
  re += fmt::format("\\x{{{:x}}}", static_cast<uint32_t>(c));
}

// A literal character: LIKE folds ASCII letters only, as SQLite does.
void append_literal(std::string& re, char32_t c, bool fold) {
  if (fold && c < 0x80 && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
    const char lower = static_cast<char>(c | 0x20);
    re += '[';
    re += lower;
    re += static_cast<char>(lower - 0x20);
    re += ']';
    return;
  }
  append_code_point(re, c);
}

constexpr std::string_view kAnyRun = "(?s:.*)";
constexpr std::string_view kAnyOne = "(?s:.)";
constexpr std::string_view kNothing = "[^\\x{0}-\\x{10ffff}]";

struct Compiled {
  std::string pattern;      // the SQL pattern, escape appended (LIKE with ESCAPE)
  std::unique_ptr<RE2> re;  // nullptr: never matches (a malformed GLOB)
};

void free_compiled(void* p) {
  delete static_cast<Compiled*>(p);
}

std::string_view c_text(sqlite3_value* v) {
  const auto* t = reinterpret_cast<const char*>(sqlite3_value_text(v));
  return t ? std::string_view(t) : std::string_view();  // LIKE stops at a NUL, as SQLite's
}

// like(pattern, text [, escape]) and glob(pattern, text): SQLite's likeFunc
// checks, in its order, then one RE2 full match.
void match_function(sqlite3_context* ctx, int argc, sqlite3_value** argv, bool glob) {
  sqlite3* db = sqlite3_context_db_handle(ctx);
  const int pattern_bytes = sqlite3_value_bytes(argv[0]);
  if (pattern_bytes > sqlite3_limit(db, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, -1)) {
    sqlite3_result_error(ctx, "LIKE or GLOB pattern too complex", -1);
    return;
  }
  std::optional<char32_t> escape;
  std::string escape_text;
  if (argc == 3) {
    if (sqlite3_value_type(argv[2]) == SQLITE_NULL) return;
    std::string_view e = c_text(argv[2]);
    size_t k = 0, chars = 0;
    while (k < e.size()) {
      read_utf8(e, k);
      ++chars;
    }
    if (chars != 1) {
      sqlite3_result_error(ctx, "ESCAPE expression must be a single character", -1);
      return;
    }
    k = 0;
    escape = read_utf8(e, k);
    escape_text = std::string(e);
  }
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL)
    return;
  const std::string_view pattern = c_text(argv[0]);
  const std::string_view text = c_text(argv[1]);
  std::string key = std::string(pattern) + '\0' + escape_text;
  // The compiled pattern rides on the pattern argument (SQLite keeps it
  // while that argument is a constant of the statement; the key check
  // covers the rest).
  auto* cached = static_cast<Compiled*>(sqlite3_get_auxdata(ctx, 0));
  if (cached && cached->pattern == key) {
    sqlite3_result_int(ctx, cached->re && RE2::FullMatch(text, *cached->re) ? 1 : 0);
    return;
  }
  auto made = std::make_unique<Compiled>();
  made->pattern = std::move(key);
  if (std::optional<std::string> re =
          glob ? glob_to_regex(pattern) : like_to_regex(pattern, escape)) {
    RE2::Options options;
    options.set_encoding(RE2::Options::EncodingUTF8);
    options.set_log_errors(false);
    options.set_max_mem(int64_t{64} << 20);
    made->re = std::make_unique<RE2>(*re, options);
    if (!made->re->ok()) {
      sqlite3_result_error(ctx, "LIKE or GLOB pattern too complex", -1);
      return;
    }
  }
  sqlite3_result_int(ctx, made->re && RE2::FullMatch(text, *made->re) ? 1 : 0);
  sqlite3_set_auxdata(ctx, 0, made.release(), free_compiled);
}

void fn_like(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  match_function(ctx, argc, argv, false);
}

void fn_glob(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  match_function(ctx, argc, argv, true);
}

// SQLite's instrFunc, with the search done by memmem (glibc's two-way
// algorithm: linear) instead of a compare at every offset.
void fn_instr(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const int hay_type = sqlite3_value_type(argv[0]);
  const int needle_type = sqlite3_value_type(argv[1]);
  if (hay_type == SQLITE_NULL || needle_type == SQLITE_NULL) return;
  const bool blobs = hay_type == SQLITE_BLOB && needle_type == SQLITE_BLOB;
  const void* hay = blobs ? sqlite3_value_blob(argv[0]) : sqlite3_value_text(argv[0]);
  const void* needle = blobs ? sqlite3_value_blob(argv[1]) : sqlite3_value_text(argv[1]);
  const auto hay_bytes = static_cast<size_t>(sqlite3_value_bytes(argv[0]));
  const auto needle_bytes = static_cast<size_t>(sqlite3_value_bytes(argv[1]));
  if (needle_bytes == 0) {
    sqlite3_result_int(ctx, 1);
    return;
  }
  if ((!needle || (hay_bytes && !hay))) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  const auto* h = static_cast<const unsigned char*>(hay);
  const auto* n = static_cast<const unsigned char*>(needle);
  if (!blobs && (n[0] & 0xC0) == 0x80) {
    // SQLite tries text only at character starts, and offset 0: a needle
    // that starts with a continuation byte can only match there.
    const bool at_start = needle_bytes <= hay_bytes && memcmp(h, n, needle_bytes) == 0;
    sqlite3_result_int(ctx, at_start ? 1 : 0);
    return;
  }
  const void* found = memmem(h, hay_bytes, n, needle_bytes);
  if (!found) {
    sqlite3_result_int(ctx, 0);
    return;
  }
  const auto offset = static_cast<size_t>(static_cast<const unsigned char*>(found) - h);
  int64_t position = 1;
  if (blobs) {
    position += static_cast<int64_t>(offset);
  } else {
    for (size_t k = 1; k <= offset; ++k) position += (h[k] & 0xC0) != 0x80;
  }
  sqlite3_result_int64(ctx, position);
}

}  // namespace

std::optional<std::string> like_to_regex(std::string_view pattern, std::optional<char32_t> escape) {
  // An ESCAPE of '%' or '_' takes that character's wildcard meaning away.
  const bool any_run = !escape || *escape != U'%';
  const bool any_one = !escape || *escape != U'_';
  std::string re;
  size_t k = 0;
  while (k < pattern.size()) {
    char32_t c = read_utf8(pattern, k);
    if (escape && c == *escape) {
      if (k >= pattern.size()) return kNothing.data();  // an escape at the end never matches
      append_literal(re, read_utf8(pattern, k), true);
    } else if (any_run && c == U'%') {
      re += kAnyRun;
    } else if (any_one && c == U'_') {
      re += kAnyOne;
    } else {
      append_literal(re, c, true);
    }
  }
  return re;
}

std::optional<std::string> glob_to_regex(std::string_view pattern) {
  std::string re;
  size_t k = 0;
  while (k < pattern.size()) {
    char32_t c = read_utf8(pattern, k);
    if (c == U'*') {
      re += kAnyRun;
    } else if (c == U'?') {
      re += kAnyOne;
    } else if (c == U'[') {
      // SQLite's set: '^' first inverts, ']' first is a member, "a-b" a
      // range when a member precedes '-' and ']' does not follow it.
      bool invert = false;
      std::vector<std::pair<char32_t, char32_t>> members;
      char32_t c2 = read_utf8(pattern, k);
      if (c2 == U'^') {
        invert = true;
        c2 = read_utf8(pattern, k);
      }
      if (c2 == U']') {
        members.emplace_back(U']', U']');
        c2 = read_utf8(pattern, k);
      }
      char32_t prior = 0;
      while (c2 && c2 != U']') {
        if (c2 == U'-' && k < pattern.size() && pattern[k] != ']' && prior > 0) {
          c2 = read_utf8(pattern, k);
          members.emplace_back(prior, c2);  // `prior` stays a member on its own
          prior = 0;
        } else {
          members.emplace_back(c2, c2);
          prior = c2;
        }
        c2 = read_utf8(pattern, k);
      }
      if (c2 == 0) return std::nullopt;  // unterminated: SQLite never matches
      std::string set;
      for (auto [lo, hi] : members) {
        if (lo > hi) continue;  // an empty range
        append_code_point(set, lo);
        if (hi != lo) {
          set += '-';
          append_code_point(set, hi);
        }
      }
      if (set.empty())
        re += invert ? kAnyOne : kNothing;
      else
        re += fmt::format("[{}{}]", invert ? "^" : "", set);
    } else {
      append_literal(re, c, false);
    }
  }
  return re;
}

void register_linear_text_functions(sqlite3* db) {
  const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
  sqlite3_create_function_v2(db, "like", 2, flags, nullptr, fn_like, nullptr, nullptr, nullptr);
  sqlite3_create_function_v2(db, "like", 3, flags, nullptr, fn_like, nullptr, nullptr, nullptr);
  sqlite3_create_function_v2(db, "glob", 2, flags, nullptr, fn_glob, nullptr, nullptr, nullptr);
  sqlite3_create_function_v2(db, "instr", 2, flags, nullptr, fn_instr, nullptr, nullptr, nullptr);
}

}  // namespace jarvis::sql
