// load_export: one prepared SELECT per export table, one pass each, rows
// straight into the Export's vectors. Columns a table lacks in an older (or
// newer) schema are asked for only when optional; a missing required one is
// an error naming the table, the column and the export's schema version.
#include <sqlite3.h>
#include <stdlib.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "base/utf8.h"
#include "nsys/export.h"

namespace jarvis::nsys {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};
constexpr std::string_view kReexport =
    "re-export the report with a current Nsight Systems: `nsys export --type sqlite "
    "--force-overwrite true --output REPORT.sqlite REPORT.nsys-rep`";

// "file:" URI for a path, percent-encoding what a URI would read as syntax.
std::string file_uri(const std::string& path) {
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (c == '?' || c == '#' || c == '%' || c < 0x20 || c >= 0x7f)
      uri += fmt::format("%{:02X}", c);
    else
      uri += static_cast<char>(c);
  }
  return uri + "?mode=ro";
}

// Whether the database header says WAL mode (file format versions 2).
bool wal_mode(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char h[20] = {};
  in.read(reinterpret_cast<char*>(h), sizeof h);
  return in.gcount() == sizeof h && (h[18] == 2 || h[19] == 2);
}

// The file SQLite opens for reading an export, with no file written beside
// the user's. A rollback-journal database is opened read-only as it is (no
// file is created, a writer's lock is seen). A WAL-mode one would get -shm
// and -wal files beside it, or an existing -shm rewritten: without a log
// holding pages it is opened immutable (no lock, no file touched); with one
// (its writer did not checkpoint) it is copied, log included, into a
// private directory removed after the read.
class ReadableCopy {
 public:
  explicit ReadableCopy(const std::string& path) {
    std::error_code ec;
    if (!wal_mode(path)) {
      uri_ = file_uri(path);
      return;
    }
    const fs::path wal = path + "-wal";
    if (!(fs::is_regular_file(wal, ec) && fs::file_size(wal, ec) > 0)) {
      uri_ = file_uri(path) + "&immutable=1";
      return;
    }
    std::string dir = (fs::temp_directory_path(ec) / "jarvis-nsys-XXXXXX").string();
    if (!::mkdtemp(dir.data()))
      throw TraceError(fmt::format("{}: cannot make a private copy of a WAL-mode database: {}",
                                   path, std::strerror(errno)));
    dir_ = dir;
    const fs::path copy = dir_ / "export.sqlite";
    fs::copy_file(path, copy, ec);
    if (!ec) fs::copy_file(wal, dir_ / "export.sqlite-wal", ec);
    if (ec)
      throw TraceError(fmt::format("{}: cannot make a private copy of a WAL-mode database: {}",
                                   path, ec.message()));
    uri_ = file_uri(copy.string());
  }
  ReadableCopy(const ReadableCopy&) = delete;
  ReadableCopy& operator=(const ReadableCopy&) = delete;
  ~ReadableCopy() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  const std::string& uri() const { return uri_; }

 private:
  fs::path dir_;
  std::string uri_;
};

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// The database header's page size x page count, where the header vouches
// for the count (its "version valid for" equals the change counter); 0 when
// it does not. A file shorter than that was cut off.
uint64_t header_database_bytes(const unsigned char* h) {
  uint32_t page_size = (uint32_t{h[16]} << 8) | h[17];
  if (page_size == 1) page_size = 65536;
  if (be32(h + 92) != be32(h + 24)) return 0;
  return uint64_t{page_size} * be32(h + 28);
}

// Reads the first 100 bytes (the SQLite header) and checks them.
void check_header(const std::string& path, uint64_t file_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw cannot_open(path, errno);
  std::array<unsigned char, 100> h{};
  in.read(reinterpret_cast<char*>(h.data()), h.size());
  std::string_view magic(reinterpret_cast<const char*>(h.data()), 16);
  if (static_cast<size_t>(in.gcount()) < kSqliteMagic.size() || magic != kSqliteMagic)
    throw TraceError(
        fmt::format("{}: not an SQLite file (an Nsight Systems export starts with "
                    "\"SQLite format 3\")",
                    path));
  if (in.gcount() < 100)
    throw TraceError(
        fmt::format("{}: a truncated SQLite file ({} bytes, shorter than its "
                    "100-byte header); {}",
                    path, file_bytes, kReexport));
  uint64_t expected = header_database_bytes(h.data());
  if (expected > file_bytes)
    throw TraceError(
        fmt::format("{}: a truncated SQLite file: its header describes {} bytes, "
                    "the file has {}; copy it again or {}",
                    path, expected, file_bytes, kReexport));
}

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

[[noreturn]] void fail(const std::string& path, sqlite3* db, int rc, std::string_view doing) {
  int code = rc & 0xff;
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
    throw TraceError(
        fmt::format("{}: the database is locked by another process ({}); wait "
                    "until the writer (nsys export?) finishes, or copy the file",
                    path, doing));
  if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB || code == SQLITE_IOERR)
    throw TraceError(fmt::format("{}: a damaged or truncated SQLite file ({}: {}); {}", path, doing,
                                 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc), kReexport));
  throw TraceError(fmt::format("{}: SQLite error while {}: {}", path, doing,
                               db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)), readable_(path_) {
    sqlite3* raw = nullptr;
    int rc = sqlite3_open_v2(readable_.uri().c_str(), &raw,
                             SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
    db_.reset(raw);
    if (rc != SQLITE_OK) fail(path_, db_.get(), rc, "opening it read-only");
    // A writer holding the lock briefly is waited for; a long one is an error.
    sqlite3_busy_timeout(db_.get(), 2000);
    Stmt s = prepare("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')");
    while (step(s, "reading its table list"))
      (text(s, 1) == "view" ? views_ : tables_).insert(text(s, 0));
  }

  // True for a table; a view of a name jarvis reads is refused: nsys exports
  // tables only, and a view computes its rows when read, without bound (a
  // recursive view never ends; a 1.9 MB file made 3.6 GB, issue 63).
  bool has_table(const std::string& t) const {
    if (views_.count(t))
      throw TraceError(fmt::format(
          "{}: {} is a view, not a table; an Nsight Systems export has tables only, and jarvis "
          "does not evaluate views of an input (their rows are computed without bound); {}",
          path_, t, kReexport));
    return tables_.count(t) != 0;
  }

  std::set<std::string> columns(const std::string& table) {
    std::set<std::string> cols;
    Stmt s = prepare(fmt::format("PRAGMA table_info(\"{}\")", table));
    while (step(s, "reading a table's columns")) cols.insert(text(s, 1));
    return cols;
  }

  // SELECT of `wanted` columns from `table` (optional ones marked with a
  // leading '?', NULL when absent); a missing required one throws.
  Stmt select(const std::string& table, std::initializer_list<std::string_view> wanted,
              const std::string& tail, const std::string& schema) {
    std::set<std::string> cols = columns(table);
    std::string list;
    for (std::string_view w : wanted) {
      bool optional = w.starts_with('?');
      std::string name(optional ? w.substr(1) : w);
      if (!list.empty()) list += ", ";
      if (cols.count(name)) {
        list += fmt::format("\"{}\"", name);
      } else if (optional) {
        list += "NULL";
      } else {
        throw TraceError(fmt::format(
            "{}: export schema {}: table {} has no column {}, which jarvis reads (it reads the "
            "schema of Nsight Systems 2021.2 and later, 3.x); {}",
            path_, schema.empty() ? "unknown (no META_DATA_EXPORT)" : schema, table, name,
            kReexport));
      }
    }
    return prepare(fmt::format("SELECT {} FROM \"{}\" {}", list, table, tail));
  }

  Stmt prepare(const std::string& sql) {
    sqlite3_stmt* raw = nullptr;
    int rc =
        sqlite3_prepare_v2(db_.get(), sql.c_str(), static_cast<int>(sql.size()), &raw, nullptr);
    Stmt s(raw);
    if (rc != SQLITE_OK) fail(path_, db_.get(), rc, "preparing a query");
    return s;
  }

  bool step(Stmt& s, std::string_view doing) {
    int rc = sqlite3_step(s.get());
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(path_, db_.get(), rc, doing);
  }

  static std::string text(Stmt& s, int col) {
    const unsigned char* t = sqlite3_column_text(s.get(), col);
    // Names become valid UTF-8 here, once (base/utf8.h).
    return t ? valid_utf8(std::string_view(reinterpret_cast<const char*>(t),
                                           static_cast<size_t>(sqlite3_column_bytes(s.get(), col))))
             : std::string();
  }
  static bool null(Stmt& s, int col) { return sqlite3_column_type(s.get(), col) == SQLITE_NULL; }
  static int64_t i64(Stmt& s, int col) { return sqlite3_column_int64(s.get(), col); }
  static int64_t i64_or(Stmt& s, int col, int64_t fallback) {
    return null(s, col) ? fallback : i64(s, col);
  }

 private:
  std::string path_;
  ReadableCopy readable_;  // before db_: closed after it
  Db db_;
  std::set<std::string> tables_;
  std::set<std::string> views_;
};

constexpr const char* kKernel = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr const char* kRuntime = "CUPTI_ACTIVITY_KIND_RUNTIME";
constexpr const char* kMemcpy = "CUPTI_ACTIVITY_KIND_MEMCPY";
constexpr const char* kMemset = "CUPTI_ACTIVITY_KIND_MEMSET";
constexpr const char* kSync = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
constexpr const char* kNvtx = "NVTX_EVENTS";

// NVTX range event types (ENUM_NSYS_EVENT_TYPE): NvtxPushPopRange,
// NvtxStartEndRange and their NVTXT (text file) twins.
constexpr const char* kNvtxRangeTypes = "(59, 60, 70, 71)";

void read_metadata(Reader& r, Export& ex) {
  if (!r.has_table("META_DATA_EXPORT")) return;
  Stmt s = r.prepare(
      "SELECT name, value FROM META_DATA_EXPORT WHERE name IN ('EXPORT_SCHEMA_VERSION', "
      "'EXPORT_PRODUCT_VERSION')");
  while (r.step(s, "reading META_DATA_EXPORT")) {
    std::string name = Reader::text(s, 0);
    (name == "EXPORT_SCHEMA_VERSION" ? ex.schema_version : ex.product_version) = Reader::text(s, 1);
  }
}

void check_is_export(Reader& r, const Export& ex) {
  bool any_activity = r.has_table(kKernel) || r.has_table(kRuntime) || r.has_table(kNvtx);
  if (!r.has_table("StringIds") && !r.has_table("META_DATA_EXPORT") && !any_activity)
    throw TraceError(fmt::format(
        "{}: an SQLite database, but not an Nsight Systems export (it has none of the tables "
        "StringIds, META_DATA_EXPORT, {}, {}); export a report with `nsys export --type sqlite`",
        ex.path, kKernel, kNvtx));
  if (!r.has_table("StringIds"))
    throw TraceError(fmt::format(
        "{}: export schema {}: no StringIds table, which every export since Nsight Systems "
        "2021.2 has and jarvis reads names from; {}",
        ex.path, ex.schema_version.empty() ? "unknown" : ex.schema_version, kReexport));
  if (!any_activity)
    throw TraceError(fmt::format(
        "{}: an Nsight Systems export without CUDA or NVTX activity (no {}, {} or {} table): "
        "profile with `nsys profile --trace=cuda,nvtx` and export again",
        ex.path, kKernel, kRuntime, kNvtx));
}

void read_strings(Reader& r, Export& ex, const std::string& schema) {
  Stmt s = r.select("StringIds", {"id", "value"}, "", schema);
  while (r.step(s, "reading StringIds")) ex.strings.emplace(Reader::i64(s, 0), Reader::text(s, 1));
}

void read_kernels(Reader& r, Export& ex, const std::string& schema) {
  if (!r.has_table(kKernel)) return;
  Stmt s = r.select(
      kKernel,
      {"start", "end", "deviceId", "streamId", "?contextId", "?correlationId", "?globalPid",
       "demangledName", "shortName", "?gridX", "?gridY", "?gridZ", "?blockX", "?blockY", "?blockZ",
       "?registersPerThread", "?staticSharedMemory", "?dynamicSharedMemory"},
      "", schema);
  while (r.step(s, "reading CUPTI_ACTIVITY_KIND_KERNEL")) {
    Kernel k;
    k.start_ns = Reader::i64(s, 0);
    k.end_ns = Reader::i64(s, 1);
    k.device_id = Reader::i64(s, 2);
    k.stream_id = Reader::i64(s, 3);
    k.context_id = Reader::i64_or(s, 4, 0);
    k.correlation_id = Reader::i64_or(s, 5, kNoInt);
    k.global_pid = Reader::i64_or(s, 6, 0);
    k.demangled_name = Reader::i64(s, 7);
    k.short_name = Reader::i64(s, 8);
    for (int d = 0; d < 3; ++d) {
      k.grid[d] = static_cast<int32_t>(Reader::i64_or(s, 9 + d, 1));
      k.block[d] = static_cast<int32_t>(Reader::i64_or(s, 12 + d, 1));
    }
    k.registers_per_thread = static_cast<int32_t>(Reader::i64_or(s, 15, 0));
    k.shared_memory_bytes = Reader::i64_or(s, 16, 0) + Reader::i64_or(s, 17, 0);
    ex.kernels.push_back(k);
  }
}

// The columns memcpy and memset rows share, selected first and in this order:
// start, end, deviceId, streamId, correlationId, globalPid, bytes.
MemoryOp memory_op_columns(Stmt& s) {
  MemoryOp m;
  m.start_ns = Reader::i64(s, 0);
  m.end_ns = Reader::i64(s, 1);
  m.device_id = Reader::i64(s, 2);
  m.stream_id = Reader::i64(s, 3);
  m.correlation_id = Reader::i64_or(s, 4, kNoInt);
  m.global_pid = Reader::i64_or(s, 5, 0);
  m.bytes = Reader::i64(s, 6);
  return m;
}

void read_memory_ops(Reader& r, Export& ex, const std::string& schema) {
  if (r.has_table(kMemcpy)) {
    Stmt s = r.select(kMemcpy,
                      {"start", "end", "deviceId", "streamId", "?correlationId", "?globalPid",
                       "bytes", "copyKind", "?srcKind", "?dstKind"},
                      "", schema);
    while (r.step(s, "reading CUPTI_ACTIVITY_KIND_MEMCPY")) {
      MemoryOp m = memory_op_columns(s);
      m.copy_kind = static_cast<int>(Reader::i64(s, 7));
      m.src_kind = static_cast<int>(Reader::i64_or(s, 8, -1));
      m.dst_kind = static_cast<int>(Reader::i64_or(s, 9, -1));
      ex.memcpys.push_back(m);
    }
  }
  if (r.has_table(kMemset)) {
    Stmt s = r.select(kMemset,
                      {"start", "end", "deviceId", "streamId", "?correlationId", "?globalPid",
                       "bytes", "?memKind"},
                      "", schema);
    while (r.step(s, "reading CUPTI_ACTIVITY_KIND_MEMSET")) {
      MemoryOp m = memory_op_columns(s);
      m.dst_kind = static_cast<int>(Reader::i64_or(s, 7, -1));
      ex.memsets.push_back(m);
    }
  }
}

void read_syncs(Reader& r, Export& ex, const std::string& schema) {
  if (!r.has_table(kSync)) return;
  Stmt s = r.select(
      kSync, {"start", "end", "deviceId", "streamId", "?correlationId", "?globalPid", "?syncType"},
      "", schema);
  while (r.step(s, "reading CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")) {
    Synchronization y;
    y.start_ns = Reader::i64(s, 0);
    y.end_ns = Reader::i64(s, 1);
    y.device_id = Reader::i64(s, 2);
    y.stream_id = Reader::i64(s, 3);
    y.correlation_id = Reader::i64_or(s, 4, kNoInt);
    y.global_pid = Reader::i64_or(s, 5, 0);
    y.sync_type = static_cast<int>(Reader::i64_or(s, 6, 0));
    ex.syncs.push_back(y);
  }
}

void read_runtime(Reader& r, Export& ex, const std::string& schema) {
  if (!r.has_table(kRuntime)) return;
  Stmt s =
      r.select(kRuntime, {"start", "end", "globalTid", "?correlationId", "nameId"}, "", schema);
  while (r.step(s, "reading CUPTI_ACTIVITY_KIND_RUNTIME")) {
    RuntimeCall c;
    c.start_ns = Reader::i64(s, 0);
    c.end_ns = Reader::i64(s, 1);
    c.global_tid = Reader::i64_or(s, 2, 0);
    c.correlation_id = Reader::i64_or(s, 3, kNoInt);
    c.name = Reader::i64(s, 4);
    ex.runtime.push_back(c);
  }
}

void read_nvtx(Reader& r, Export& ex, const std::string& schema) {
  if (!r.has_table(kNvtx)) return;
  Stmt s = r.select(kNvtx, {"start", "end", "?globalTid", "?domainId", "?text", "?textId"},
                    fmt::format("WHERE \"end\" IS NOT NULL AND eventType IN {}", kNvtxRangeTypes),
                    schema);
  while (r.step(s, "reading NVTX_EVENTS")) {
    NvtxRange n;
    n.start_ns = Reader::i64(s, 0);
    n.end_ns = Reader::i64(s, 1);
    n.global_tid = Reader::i64_or(s, 2, 0);
    n.domain_id = Reader::i64_or(s, 3, 0);
    if (!Reader::null(s, 4)) {
      n.text = Reader::text(s, 4);
    } else if (!Reader::null(s, 5)) {
      n.text = std::string(ex.string(Reader::i64(s, 5)));
    }
    ex.nvtx.push_back(std::move(n));
  }
}

void read_names(Reader& r, Export& ex, const std::string& schema) {
  if (r.has_table("ThreadNames")) {
    Stmt s = r.select("ThreadNames", {"nameId", "globalTid"}, "", schema);
    while (r.step(s, "reading ThreadNames"))
      ex.thread_names[Reader::i64(s, 1)] = std::string(ex.string(Reader::i64(s, 0)));
  }
  if (r.has_table("PROCESSES")) {
    Stmt s = r.select("PROCESSES", {"pid", "name"}, "", schema);
    while (r.step(s, "reading PROCESSES"))
      if (!Reader::null(s, 0)) ex.process_names[Reader::i64(s, 0)] = Reader::text(s, 1);
  }
  if (r.has_table("TARGET_INFO_GPU")) {
    std::set<std::string> cols = r.columns("TARGET_INFO_GPU");
    if (cols.count("name")) {
      // The CUDA device ordinal (deviceId of the activity tables) is cuDevice
      // where the schema has it, id otherwise.
      Stmt s = r.select("TARGET_INFO_GPU", {cols.count("cuDevice") ? "cuDevice" : "id", "name"}, "",
                        schema);
      while (r.step(s, "reading TARGET_INFO_GPU"))
        ex.gpu_names.emplace(Reader::i64(s, 0), Reader::text(s, 1));
    }
  }
}

}  // namespace

std::string_view Export::string(int64_t id) const {
  auto it = strings.find(id);
  return it == strings.end() ? std::string_view() : std::string_view(it->second);
}

bool is_nsys_input(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char head[16] = {};
  in.read(head, sizeof head);
  return in.gcount() == 16 && std::string_view(head, 16) == kSqliteMagic;
}

Export load_export(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw cannot_open(path, ENOENT);
  Export ex;
  ex.path = path;
  ex.file_bytes = fs::file_size(path, ec);
  check_header(path, ex.file_bytes);
  Reader r(path);
  read_metadata(r, ex);
  check_is_export(r, ex);
  const std::string& schema = ex.schema_version;
  read_strings(r, ex, schema);
  read_kernels(r, ex, schema);
  read_memory_ops(r, ex, schema);
  read_syncs(r, ex, schema);
  read_runtime(r, ex, schema);
  read_nvtx(r, ex, schema);
  read_names(r, ex, schema);
  return ex;
}

}  // namespace jarvis::nsys
