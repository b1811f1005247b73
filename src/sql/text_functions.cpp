#include "sql/text_functions.h"

#include <re2/re2.h>
#include <string.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
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
  // A SQLite built with LIKE_DOESNT_MATCH_BLOBS (Debian's) answers 0 for a
  // blob on either side before any other check (found by fuzz_sql_text:
  // x'61' LIKE x'61' was 1 here, 0 in SQLite).
  static const bool blobs_never_match = sqlite3_compileoption_used("LIKE_DOESNT_MATCH_BLOBS") != 0;
  if (blobs_never_match &&
      (sqlite3_value_type(argv[0]) == SQLITE_BLOB || sqlite3_value_type(argv[1]) == SQLITE_BLOB)) {
    sqlite3_result_int(ctx, 0);
    return;
  }
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
  // memmem's arguments may not be null, and an empty haystack's is
  // (found by fuzz_sql_text: instr(x'', x'24') under UBSan).
  const void* found = hay_bytes < needle_bytes ? nullptr : memmem(h, hay_bytes, n, needle_bytes);
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

// The characters of a trim() set as SQLite splits them (trimFunc's
// SQLITE_SKIP_UTF8: a byte below 0xC0 alone, else a lead byte and every
// continuation byte after it), each with the index of its first occurrence:
// SQLite takes, at each step, the first character of the set that matches.
struct TrimSet {
  std::array<int, 256> single;                      // one-byte characters; -1: none
  std::unordered_map<std::string_view, int> multi;  // longer ones
  std::vector<size_t> multi_lengths;                // their distinct lengths, ascending
};

TrimSet trim_set(std::string_view set) {
  TrimSet t;
  t.single.fill(-1);
  int index = 0;
  for (size_t k = 0; k < set.size(); ++index) {
    const size_t start = k;
    if (static_cast<unsigned char>(set[k++]) >= 0xC0)
      while (k < set.size() && (static_cast<unsigned char>(set[k]) & 0xC0) == 0x80) ++k;
    const std::string_view c = set.substr(start, k - start);
    if (c.size() == 1) {
      int& first = t.single[static_cast<unsigned char>(c[0])];
      if (first < 0) first = index;
    } else if (t.multi.emplace(c, index).second) {
      t.multi_lengths.push_back(c.size());
    }
  }
  std::sort(t.multi_lengths.begin(), t.multi_lengths.end());
  t.multi_lengths.erase(std::unique(t.multi_lengths.begin(), t.multi_lengths.end()),
                        t.multi_lengths.end());
  return t;
}

bool is_continuation(unsigned char b) {
  return (b & 0xC0) == 0x80;
}

// The length of the set's first character that `text` starts with; 0: none.
// A longer character starts with a lead byte followed by continuation bytes
// only, so only that run of `text` is looked up, once per length of the set.
size_t trim_prefix(const TrimSet& t, std::string_view text) {
  const auto lead = static_cast<unsigned char>(text[0]);
  int best = t.single[lead];
  size_t best_length = best >= 0 ? 1 : 0;
  if (lead < 0xC0) return best_length;
  size_t run = 1;
  for (size_t length : t.multi_lengths) {
    while (run < length && run < text.size() && is_continuation(text[run])) ++run;
    if (run < length) break;
    auto it = t.multi.find(text.substr(0, length));
    if (it != t.multi.end() && (best < 0 || it->second < best)) {
      best = it->second;
      best_length = length;
    }
  }
  return best_length;
}

// The length of the set's first character that `text` ends with; 0: none.
// A longer character can only be the last lead byte and what follows it.
size_t trim_suffix(const TrimSet& t, std::string_view text) {
  int best = t.single[static_cast<unsigned char>(text.back())];
  size_t best_length = best >= 0 ? 1 : 0;
  if (t.multi.empty()) return best_length;
  const size_t longest = t.multi_lengths.back();
  size_t start = text.size() - 1;
  while (start > 0 && is_continuation(text[start]) && text.size() - start < longest) --start;
  const size_t length = text.size() - start;
  if (static_cast<unsigned char>(text[start]) < 0xC0 || length < 2 ||
      !std::binary_search(t.multi_lengths.begin(), t.multi_lengths.end(), length))
    return best_length;
  auto it = t.multi.find(text.substr(start));
  if (it != t.multi.end() && (best < 0 || it->second < best)) best_length = length;
  return best_length;
}

// trim(X, Y), ltrim(X, Y), rtrim(X, Y) as SQLite's trimFunc computes them,
// with the set in a table instead of compared character by character at
// every step (a 200 KB set over a 4 MB value: minutes in one call, issue 74
// point 1). `sqlite3_user_data`: 1 left, 2 right, 3 both.
void fn_trim(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return;
  const auto* in = reinterpret_cast<const char*>(sqlite3_value_text(argv[0]));
  if (!in) return;
  std::string_view text(in, static_cast<size_t>(sqlite3_value_bytes(argv[0])));
  const auto* set = reinterpret_cast<const char*>(sqlite3_value_text(argv[1]));
  if (!set) return;
  const TrimSet t = trim_set(set);  // the set's text ends at its first NUL, as in SQLite
  const auto sides = static_cast<int>(reinterpret_cast<intptr_t>(sqlite3_user_data(ctx)));
  if (sides & 1) {
    while (!text.empty()) {
      const size_t n = trim_prefix(t, text);
      if (n == 0) break;
      text.remove_prefix(n);
    }
  }
  if (sides & 2) {
    while (!text.empty()) {
      const size_t n = trim_suffix(t, text);
      if (n == 0) break;
      text.remove_suffix(n);
    }
  }
  sqlite3_result_text(ctx, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

// replace(X, Y, Z) as SQLite's replaceFunc computes it (leftmost matches,
// not overlapping; an empty Y returns X as it is), each match found by memmem
// (two-way: linear) instead of a compare at every byte that starts like Y.
void fn_replace(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const auto* str = reinterpret_cast<const char*>(sqlite3_value_text(argv[0]));
  if (!str) return;
  const auto str_bytes = static_cast<size_t>(sqlite3_value_bytes(argv[0]));
  const auto* pattern = reinterpret_cast<const char*>(sqlite3_value_text(argv[1]));
  if (!pattern) return;
  const auto pattern_bytes = static_cast<size_t>(sqlite3_value_bytes(argv[1]));
  if (pattern[0] == '\0') {  // SQLite's test: a pattern that starts with a NUL counts as empty
    sqlite3_result_value(ctx, argv[0]);
    return;
  }
  const auto* rep = reinterpret_cast<const char*>(sqlite3_value_text(argv[2]));
  if (!rep) return;
  const std::string_view with(rep, static_cast<size_t>(sqlite3_value_bytes(argv[2])));
  const auto max_bytes =
      static_cast<size_t>(sqlite3_limit(sqlite3_context_db_handle(ctx), SQLITE_LIMIT_LENGTH, -1));
  std::string out;
  size_t at = 0;
  while (at < str_bytes) {
    const void* found = memmem(str + at, str_bytes - at, pattern, pattern_bytes);
    const size_t next =
        found ? static_cast<size_t>(static_cast<const char*>(found) - str) : str_bytes;
    out.append(str + at, next - at);
    if (found) out.append(with);
    if (out.size() > max_bytes) {
      sqlite3_result_error_toobig(ctx);
      return;
    }
    at = found ? next + pattern_bytes : str_bytes;
  }
  sqlite3_result_text64(ctx, out.data(), out.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
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
  sqlite3_create_function_v2(db, "replace", 3, flags, nullptr, fn_replace, nullptr, nullptr,
                             nullptr);
  const std::pair<const char*, intptr_t> trims[] = {{"ltrim", 1}, {"rtrim", 2}, {"trim", 3}};
  for (auto [name, sides] : trims)
    sqlite3_create_function_v2(db, name, 2, flags, reinterpret_cast<void*>(sides), fn_trim, nullptr,
                               nullptr, nullptr);
}

}  // namespace jarvis::sql
