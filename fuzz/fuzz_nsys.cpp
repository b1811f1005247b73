// libFuzzer target for the Nsight Systems reader (src/nsys). SQLite files
// mutated byte by byte are almost all "damaged", so the input is a recipe
// the target turns into an export, written to a private temp file and read
// back as every tool reads it (load_export, to_trace, the call tree):
//   byte 0: which of StringIds / the kernel / runtime / NVTX tables are
//           VIEWS (a view must be refused before a row is read);
//   then records: an opcode byte and varint operands,
//     0 a string of N copies of a byte, 1 a kernel, 2 a runtime call,
//     3 an NVTX range, 4 repeat the previous record N times.
// N reaches 2^20 and counts reach 2^16: the recipe amplifies as the
// attacker's files did (900 MB names, endless views, millions of rows), and
// the reader must refuse or stay within its budgets. A TraceError is the
// expected refusal; any other exception, crash or sanitizer report is a
// finding.
#include <sqlite3.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "nsys/export.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace {

struct Recipe {
  std::string_view in;
  size_t k = 0;
  bool done() const { return k >= in.size(); }
  uint8_t byte() { return done() ? 0 : static_cast<uint8_t>(in[k++]); }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 35 && !done(); shift += 7) {
      uint8_t c = byte();
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) break;
    }
    return v;
  }
};

void exec(sqlite3* db, const std::string& sql) {
  sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
}

const char* const kTables[4][2] = {
    {"StringIds", "id INTEGER PRIMARY KEY, value TEXT NOT NULL"},
    {"CUPTI_ACTIVITY_KIND_KERNEL",
     "start INTEGER NOT NULL, \"end\" INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId "
     "INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, "
     "demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, gridX INTEGER, gridY INTEGER, "
     "gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER"},
    {"CUPTI_ACTIVITY_KIND_RUNTIME",
     "start INTEGER NOT NULL, \"end\" INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid "
     "INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL"},
    {"NVTX_EVENTS",
     "start INTEGER NOT NULL, \"end\" INTEGER, eventType INTEGER NOT NULL, text TEXT, globalTid "
     "INTEGER, textId INTEGER, domainId INTEGER"}};

// The export the recipe describes, as SQL run on `db`.
void build(sqlite3* db, Recipe& r) {
  const uint8_t views = r.byte();
  for (int t = 0; t < 4; ++t) {
    if (views & (1 << t))
      exec(db, std::string("CREATE VIEW ") + kTables[t][0] +
                   " AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
                   "SELECT i AS id, printf('%.*c', 1000, 'x') AS value FROM n");
    else
      exec(db, std::string("CREATE TABLE ") + kTables[t][0] + " (" + kTables[t][1] + ")");
  }
  exec(db, "BEGIN");
  std::string last;
  uint64_t last_bytes = 0;
  int64_t next_string = 1;
  // The file itself stays small (32 MiB, 200k rows): a large file is only
  // large; what matters is what a small one expands to.
  uint64_t bytes = 0, rows = 0;
  constexpr uint64_t kMaxBytes = 32u << 20, kMaxRows = 200'000;
  for (int records = 0; !r.done() && records < 256; ++records) {
    std::string sql;
    uint64_t row_bytes = 64;
    switch (r.byte() % 5) {
      case 0: {
        const uint64_t n = r.varint() % (1u << 20);
        const char c = static_cast<char>('a' + r.byte() % 26);
        row_bytes += n;
        sql = "INSERT INTO StringIds VALUES (" + std::to_string(next_string++) +
              ", printf('%.*c', " + std::to_string(n) + ", '" + c + "'))";
        break;
      }
      case 1: {
        const uint64_t start = r.varint(), dur = r.varint(), dev = r.byte() % 4,
                       stream = r.byte() % 8, corr = r.varint(), name = r.varint() % 64;
        sql = "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (" + std::to_string(start) + ", " +
              std::to_string(start + dur) + ", " + std::to_string(dev) + ", 1, " +
              std::to_string(stream) + ", " + std::to_string(corr) + ", 117440512, " +
              std::to_string(name) + ", " + std::to_string(name) + ", 1, 1, 1, 128, 1, 1)";
        break;
      }
      case 2: {
        const uint64_t start = r.varint(), dur = r.varint(), corr = r.varint(),
                       name = r.varint() % 64;
        sql = "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (" + std::to_string(start) + ", " +
              std::to_string(start + dur) + ", 1, 281474976710656, " + std::to_string(corr) + ", " +
              std::to_string(name) + ", 0)";
        break;
      }
      case 3: {
        const uint64_t start = r.varint(), dur = r.varint(), n = r.varint() % (1u << 16);
        row_bytes += n;
        sql = "INSERT INTO NVTX_EVENTS VALUES (" + std::to_string(start) + ", " +
              std::to_string(start + dur) + ", 59, printf('%.*c', " + std::to_string(n) +
              ", 'r'), 281474976710656, NULL, 0)";
        break;
      }
      default: {
        const uint64_t times = r.varint() % (1u << 16);
        for (uint64_t k = 0; k < times && !last.empty(); ++k) {
          if (bytes + last_bytes > kMaxBytes || ++rows > kMaxRows) break;
          bytes += last_bytes;
          exec(db, last);
        }
        continue;
      }
    }
    if (bytes + row_bytes > kMaxBytes || ++rows > kMaxRows) break;
    bytes += row_bytes;
    exec(db, sql);
    last = sql;
    last_bytes = row_bytes;
  }
  exec(db, "COMMIT");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir ? dir : "/tmp") + "/jarvis_fuzz_nsys." + std::to_string(getpid()) +
           ".sqlite";
  }();
  ::unlink(path.c_str());
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    return 0;
  }
  exec(db, "PRAGMA journal_mode = OFF");
  exec(db, "PRAGMA synchronous = OFF");
  Recipe recipe{std::string_view(reinterpret_cast<const char*>(data), size)};
  build(db, recipe);
  sqlite3_close(db);
  try {
    jarvis::nsys::Export ex = jarvis::nsys::load_export(path);
    jarvis::Trace trace = jarvis::nsys::to_trace(ex);
    jarvis::CallTree tree(trace);
  } catch (const jarvis::TraceError&) {
  }
  ::unlink(path.c_str());
  return 0;
}
