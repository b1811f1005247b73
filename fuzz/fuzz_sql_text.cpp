// libFuzzer target, differential: the linear LIKE, GLOB, instr(), replace()
// and trim() / ltrim() / rtrim() (sql/text_functions.h) against SQLite's own
// on the same arguments. Each input picks a function and its arguments (text
// or blob, up to 48 bytes each: SQLite's own LIKE backtracks, and the
// reference must stay quick). Results (hex of the value, or the error
// message) must be equal, except that LIKE / GLOB on text that is not UTF-8
// are only run (docs/security.md: '_' and '?' may take a byte there where
// SQLite takes a sequence). A crash, sanitizer report or difference is a
// finding.
#include <fuzzer/FuzzedDataProvider.h>
#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/utf8.h"
#include "sql/text_functions.h"

namespace {

struct Arg {
  std::string bytes;
  bool blob = false;
};

sqlite3* open_db(bool linear) {
  sqlite3* db = nullptr;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) std::abort();
  if (linear) jarvis::sql::register_linear_text_functions(db);
  return db;
}

std::string eval(sqlite3* db, const char* sql, const std::vector<Arg>& args) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) std::abort();
  for (size_t k = 0; k < args.size(); ++k) {
    const int i = static_cast<int>(k + 1);
    const auto n = static_cast<int>(args[k].bytes.size());
    if (args[k].blob)
      sqlite3_bind_blob(st, i, args[k].bytes.data(), n, SQLITE_TRANSIENT);
    else
      sqlite3_bind_text(st, i, args[k].bytes.data(), n, SQLITE_TRANSIENT);
  }
  std::string out;
  if (sqlite3_step(st) == SQLITE_ROW) {
    const auto* t = sqlite3_column_text(st, 0);
    out = t ? reinterpret_cast<const char*>(t) : "NULL";
  } else {
    out = std::string("ERROR: ") + sqlite3_errmsg(db);
  }
  sqlite3_finalize(st);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static sqlite3* const own = open_db(false);
  static sqlite3* const linear = open_db(true);
  // ?1 the text searched, ?2 the pattern / needle / set, ?3 the replacement
  // or the escape character.
  static const char* const kQueries[] = {
      "SELECT hex(?1 LIKE ?2)",    "SELECT hex(?1 LIKE ?2 ESCAPE ?3)", "SELECT hex(?1 GLOB ?2)",
      "SELECT hex(instr(?1, ?2))", "SELECT hex(replace(?1, ?2, ?3))",  "SELECT hex(trim(?1, ?2))",
      "SELECT hex(ltrim(?1, ?2))", "SELECT hex(rtrim(?1, ?2))",
  };
  constexpr size_t kQueryCount = sizeof kQueries / sizeof kQueries[0];
  FuzzedDataProvider in(data, size);
  const size_t which = in.ConsumeIntegralInRange<size_t>(0, kQueryCount - 1);
  std::vector<Arg> args(3);
  for (Arg& a : args) {
    a.blob = in.ConsumeIntegralInRange<int>(0, 7) == 0;
    a.bytes = in.ConsumeRandomLengthString(48);
  }
  const char* sql = kQueries[which];
  const std::string want = eval(own, sql, args);
  const std::string got = eval(linear, sql, args);
  const bool matcher = which <= 2;
  bool comparable = true;
  if (matcher)
    for (const Arg& a : args) comparable = comparable && jarvis::is_valid_utf8(a.bytes);
  if (comparable && got != want) {
    std::fprintf(stderr, "fuzz_sql_text: %s: SQLite %s, linear %s\n", sql, want.c_str(),
                 got.c_str());
    std::abort();
  }
  return 0;
}
