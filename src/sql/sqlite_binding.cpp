#include "sql/sqlite_binding.h"
#include "sql/text_functions.h"

#include <atomic>

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "base/utf8.h"
#include "tree/call_tree.h"

namespace jarvis::sql {

std::string quote_ident(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// ---------------------------------------------------------------------------
// The virtual-table module: one per table, eponymous (no CREATE needed; the
// table's name is the module's), read-only. xConnect binds the TableSource
// (the table's data is built then, on first use); xBestIndex turns an
// equality on the key column into a one-row lookup.
// ---------------------------------------------------------------------------
struct Connection::Module {
  std::string name;
  std::vector<ColumnDef> columns;
  std::function<TableSource()> bind;
  std::shared_ptr<TableSource> source;            // bound on the first xConnect
  std::shared_ptr<const PartitionedTable> parts;  // a partitioned table (no bind, no source)
  const QueryContext* ctx = nullptr;              // the call-tree functions: the trace
  std::shared_ptr<const TreeRuns> runs;           // ... or a sweep's runs (then no ctx)
  bool* declaring = nullptr;  // the connection's flag: the authorizer lets the declaration parse
  sqlite3_module vt{};
};

namespace {

struct VTab {
  sqlite3_vtab base{};  // must be first: SQLite hands back this pointer
  Connection* conn = nullptr;
  std::shared_ptr<TableSource> source;
};

struct Cursor {
  sqlite3_vtab_cursor base{};
  size_t row = 0;
  size_t end = 0;
};

class ContextSink final : public CellSink {
 public:
  explicit ContextSink(sqlite3_context* ctx) : ctx_(ctx) {}
  void null() override { sqlite3_result_null(ctx_); }
  void integer(int64_t v) override { sqlite3_result_int64(ctx_, v); }
  void real(double v) override { sqlite3_result_double(ctx_, v); }
  void text(std::string_view v, bool stable) override {
    sqlite3_result_text64(ctx_, v.data(), v.size(), stable ? SQLITE_STATIC : SQLITE_TRANSIENT,
                          SQLITE_UTF8);
  }

 private:
  sqlite3_context* ctx_;
};

int vt_connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char** err) {
  auto* m = static_cast<Connection::Module*>(aux);
  if (!m->source) {
    try {
      m->source = std::make_shared<TableSource>(m->bind());
    } catch (const std::exception& e) {
      *err = sqlite3_mprintf("table %s: %s", m->name.c_str(), e.what());
      return SQLITE_ERROR;
    }
  }
  std::string decl = "CREATE TABLE x(";
  for (size_t i = 0; i < m->columns.size(); ++i) {
    if (i) decl += ", ";
    decl += quote_ident(m->columns[i].name) + " " + col_type_name(m->columns[i].type);
  }
  decl += ")";
  // SQLite parses the declaration as a CREATE TABLE, which the authorizer
  // would refuse once the connection is locked down.
  *m->declaring = true;
  int rc = sqlite3_declare_vtab(db, decl.c_str());
  *m->declaring = false;
  if (rc != SQLITE_OK) {
    *err = sqlite3_mprintf("table %s: %s", m->name.c_str(), sqlite3_errmsg(db));
    return rc;
  }
  sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
  auto* vt = new VTab;
  vt->source = m->source;
  *out = &vt->base;
  return SQLITE_OK;
}

int vt_disconnect(sqlite3_vtab* v) {
  delete reinterpret_cast<VTab*>(v);
  return SQLITE_OK;
}

int vt_best_index(sqlite3_vtab* v, sqlite3_index_info* info) {
  const TableSource& s = *reinterpret_cast<VTab*>(v)->source;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (!c.usable || c.op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    if (s.key_column < 0 || (c.iColumn != s.key_column && c.iColumn != -1)) continue;
    info->idxNum = 1;
    info->aConstraintUsage[i].argvIndex = 1;
    info->aConstraintUsage[i].omit = 1;
    info->estimatedCost = 1;
    info->estimatedRows = 1;
    info->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
    return SQLITE_OK;
  }
  info->idxNum = 0;
  info->estimatedCost = static_cast<double>(s.rows) + 1;
  info->estimatedRows = static_cast<sqlite3_int64>(s.rows);
  return SQLITE_OK;
}

int vt_open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  *out = &(new Cursor)->base;
  return SQLITE_OK;
}

int vt_close(sqlite3_vtab_cursor* c) {
  delete reinterpret_cast<Cursor*>(c);
  return SQLITE_OK;
}

int vt_filter(sqlite3_vtab_cursor* cur, int idx_num, const char*, int argc, sqlite3_value** argv) {
  auto* c = reinterpret_cast<Cursor*>(cur);
  const TableSource& s = *reinterpret_cast<VTab*>(cur->pVtab)->source;
  c->row = 0;
  c->end = s.rows;
  if (idx_num == 1 && argc == 1) {
    c->end = 0;
    sqlite3_value* key = argv[0];
    int type = sqlite3_value_numeric_type(key);
    if (type == SQLITE_INTEGER ||
        (type == SQLITE_FLOAT &&
         sqlite3_value_double(key) == static_cast<double>(sqlite3_value_int64(key)))) {
      if (auto row = s.find_key(sqlite3_value_int64(key))) {
        c->row = *row;
        c->end = *row + 1;
      }
    }
  }
  return SQLITE_OK;
}

int vt_next(sqlite3_vtab_cursor* cur) {
  ++reinterpret_cast<Cursor*>(cur)->row;
  return SQLITE_OK;
}

int vt_eof(sqlite3_vtab_cursor* cur) {
  auto* c = reinterpret_cast<Cursor*>(cur);
  return c->row >= c->end;
}

int vt_column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int column) {
  auto* c = reinterpret_cast<Cursor*>(cur);
  ContextSink sink(ctx);
  try {
    reinterpret_cast<VTab*>(cur->pVtab)->source->cell(c->row, column, sink);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
  return SQLITE_OK;
}

int vt_rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* out) {
  *out = static_cast<sqlite3_int64>(reinterpret_cast<Cursor*>(cur)->row);
  return SQLITE_OK;
}

sqlite3_module read_only_module() {
  sqlite3_module m{};
  m.iVersion = 1;
  m.xCreate = nullptr;  // eponymous only: CREATE VIRTUAL TABLE cannot name it
  m.xConnect = vt_connect;
  m.xBestIndex = vt_best_index;
  m.xDisconnect = vt_disconnect;
  m.xDestroy = vt_disconnect;
  m.xOpen = vt_open;
  m.xClose = vt_close;
  m.xFilter = vt_filter;
  m.xNext = vt_next;
  m.xEof = vt_eof;
  m.xColumn = vt_column;
  m.xRowid = vt_rowid;
  return m;
}

// ---------------------------------------------------------------------------
// Helper functions
// ---------------------------------------------------------------------------

// overlap(a_ts, a_end, b_ts, b_end): length of [a_ts, a_end) ∩ [b_ts, b_end), 0 when disjoint.
void fn_overlap(sqlite3_context* ctx, int, sqlite3_value** argv) {
  for (int i = 0; i < 4; ++i)
    if (sqlite3_value_type(argv[i]) == SQLITE_NULL) return sqlite3_result_null(ctx);
  int64_t lo = std::max(sqlite3_value_int64(argv[0]), sqlite3_value_int64(argv[2]));
  int64_t hi = std::min(sqlite3_value_int64(argv[1]), sqlite3_value_int64(argv[3]));
  sqlite3_result_int64(ctx, hi > lo ? hi - lo : 0);
}

bool uid_arg(sqlite3_value* v, const Trace& trace, Uid& out) {
  if (sqlite3_value_type(v) != SQLITE_INTEGER) return false;
  int64_t x = sqlite3_value_int64(v);
  if (x < 0 || static_cast<uint64_t>(x) >= trace.events.size()) return false;
  out = static_cast<Uid>(x);
  return true;
}

// The call tree a helper function reads: the connection's trace, or over a
// sweep's runs the tree of the run its first argument names.
struct TreeArg {
  std::shared_ptr<const QueryContext> hold;  // keeps a run's trace loaded
  const QueryContext* qc = nullptr;
  std::vector<Cell> cells;  // the run's fixed cells (ancestors' leading columns)
};

// false: no such run (NULL, or no rows). Throws when the run cannot be loaded.
bool tree_arg(const Connection::Module& m, sqlite3_value* run, TreeArg& out, bool want_cells) {
  if (!m.runs) {
    out.qc = m.ctx;
    return true;
  }
  if (sqlite3_value_numeric_type(run) != SQLITE_INTEGER) return false;
  out.hold = m.runs->open(sqlite3_value_int64(run), want_cells ? &out.cells : nullptr);
  out.qc = out.hold.get();
  return out.qc != nullptr;
}

// parent_uid([run,] uid): the call-tree parent of any event (a kernel's: its launch call).
void fn_parent_uid(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const auto* m = static_cast<const Connection::Module*>(sqlite3_user_data(ctx));
  int first = m->runs ? 1 : 0;
  try {
    TreeArg t;
    Uid u;
    if (!tree_arg(*m, argv[0], t, false) || !uid_arg(argv[first], t.qc->trace(), u))
      return sqlite3_result_null(ctx);
    Uid p = t.qc->tree().parent(u);
    if (p == kNoUid) return sqlite3_result_null(ctx);
    sqlite3_result_int64(ctx, p);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
}

// is_ancestor([run,] ancestor, uid): 1 when `ancestor` is a strict ancestor of `uid`.
void fn_is_ancestor(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const auto* m = static_cast<const Connection::Module*>(sqlite3_user_data(ctx));
  int first = m->runs ? 1 : 0;
  try {
    TreeArg t;
    Uid a, u;
    if (!tree_arg(*m, argv[0], t, false) || !uid_arg(argv[first], t.qc->trace(), a) ||
        !uid_arg(argv[first + 1], t.qc->trace(), u))
      return sqlite3_result_null(ctx);
    const CallTree& tree = t.qc->tree();
    for (Uid p = tree.parent(u); p != kNoUid; p = tree.parent(p))
      if (p == a) return sqlite3_result_int(ctx, 1);
    sqlite3_result_int(ctx, 0);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
}

// ---------------------------------------------------------------------------
// Partitioned tables (a sweep's runs): the cursor walks the partitions that
// the constraints on the fixed columns (=, <>, <, <=, >, >=, LIKE, GLOB) can
// pass, binding each when it reaches it.
// ---------------------------------------------------------------------------

struct PartVTab {
  sqlite3_vtab base{};
  std::shared_ptr<const PartitionedTable> table;
  std::vector<size_t> distinct;  // distinct values per fixed column (cost estimates)
};

struct PartCursor {
  sqlite3_vtab_cursor base{};
  std::vector<size_t> parts;  // partitions left by the constraints
  size_t pi = 0;              // current index into parts
  std::shared_ptr<const TableSource> source;
  size_t row = 0, end = 0;
  bool keyed = false;
  int64_t key = 0;
  int64_t rowid = 0;
};

std::string cell_key(const Cell& c) {
  if (c.is_int()) return fmt::format("i{}", std::get<int64_t>(c.v));
  if (c.is_double()) return fmt::format("d{}", std::get<double>(c.v));
  if (c.is_text()) return fmt::format("t{}", c.text());
  return "n";
}

int part_connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char** err) {
  auto* m = static_cast<Connection::Module*>(aux);
  std::string decl = "CREATE TABLE x(";
  for (size_t i = 0; i < m->columns.size(); ++i) {
    if (i) decl += ", ";
    decl += quote_ident(m->columns[i].name) + " " + col_type_name(m->columns[i].type);
  }
  decl += ")";
  *m->declaring = true;
  int rc = sqlite3_declare_vtab(db, decl.c_str());
  *m->declaring = false;
  if (rc != SQLITE_OK) {
    *err = sqlite3_mprintf("table %s: %s", m->name.c_str(), sqlite3_errmsg(db));
    return rc;
  }
  sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
  auto* vt = new PartVTab;
  vt->table = m->parts;
  for (size_t c = 0; c < vt->table->fixed; ++c) {
    std::vector<std::string> seen;
    for (const auto& p : vt->table->partitions) seen.push_back(cell_key(p[c]));
    std::sort(seen.begin(), seen.end());
    vt->distinct.push_back(
        static_cast<size_t>(std::unique(seen.begin(), seen.end()) - seen.begin()));
  }
  *out = &vt->base;
  return SQLITE_OK;
}

int part_disconnect(sqlite3_vtab* v) {
  delete reinterpret_cast<PartVTab*>(v);
  return SQLITE_OK;
}

// The operators a partition's fixed cells are tested against, as idxStr
// writes them (one entry per argv value, comma-separated): "=2" (the second
// field equals the value), "!0" (run <> it), "<1", "l1" (<=), ">1", "g1"
// (>=), "L3" (LIKE), "G3" (GLOB), and "k" for the key column.
char constraint_code(unsigned char op) {
  switch (op) {
    case SQLITE_INDEX_CONSTRAINT_EQ:
      return '=';
    case SQLITE_INDEX_CONSTRAINT_NE:
      return '!';
    case SQLITE_INDEX_CONSTRAINT_LT:
      return '<';
    case SQLITE_INDEX_CONSTRAINT_LE:
      return 'l';
    case SQLITE_INDEX_CONSTRAINT_GT:
      return '>';
    case SQLITE_INDEX_CONSTRAINT_GE:
      return 'g';
    case SQLITE_INDEX_CONSTRAINT_LIKE:
      return 'L';
    case SQLITE_INDEX_CONSTRAINT_GLOB:
      return 'G';
    default:
      return 0;
  }
}

int part_best_index(sqlite3_vtab* v, sqlite3_index_info* info) {
  const auto* vt = reinterpret_cast<PartVTab*>(v);
  const PartitionedTable& t = *vt->table;
  std::string plan;
  int argv = 0;
  double parts = static_cast<double>(std::max<size_t>(1, t.partitions.size()));
  bool keyed = false;
  std::vector<bool> used(t.columns.size(), false);
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (!c.usable || c.iColumn < 0) continue;
    auto col = static_cast<size_t>(c.iColumn);
    bool key = t.key_column >= 0 && c.iColumn == t.key_column && !keyed &&
               c.op == SQLITE_INDEX_CONSTRAINT_EQ;
    char code = col < t.fixed ? constraint_code(c.op) : 0;
    if (!key && !code) continue;
    // Text order under another collation (COLLATE NOCASE) is SQLite's to
    // check; equality and the pattern operators keep their own rules.
    if (code == '<' || code == 'l' || code == '>' || code == 'g') {
      const char* coll = sqlite3_vtab_collation(info, i);
      if (coll && sqlite3_stricmp(coll, "BINARY") != 0) continue;
    }
    if (code == '=') {
      if (used[col]) continue;
      used[col] = true;
    }
    info->aConstraintUsage[i].argvIndex = ++argv;
    // The fixed columns are matched leniently (a partition is skipped only
    // when it surely fails) and a partition without a key index is scanned,
    // so SQLite checks every constraint again.
    info->aConstraintUsage[i].omit = 0;
    if (!plan.empty()) plan.push_back(',');
    if (key) {
      plan.push_back('k');
      keyed = true;
      continue;
    }
    plan.push_back(code);
    plan.append(std::to_string(col));
    if (code == '=')
      parts /= static_cast<double>(std::max<size_t>(1, vt->distinct[col]));
    else if (code != '!')
      parts /= 2;  // a range or a pattern: about half the partitions
  }
  // Rows per partition are unknown before it is bound: say many, so that
  // SQLite prefers plans that constrain the partitions or the key.
  double rows = std::max(1.0, parts) * (keyed ? 1.0 : 100000.0);
  info->estimatedRows = static_cast<sqlite3_int64>(rows);
  info->estimatedCost = rows + 1;
  info->idxNum = argv;
  if (!plan.empty()) {
    info->idxStr = sqlite3_mprintf("%s", plan.c_str());
    info->needToFreeIdxStr = 1;
  }
  return SQLITE_OK;
}

int part_open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  *out = &(new PartCursor)->base;
  return SQLITE_OK;
}

int part_close(sqlite3_vtab_cursor* c) {
  delete reinterpret_cast<PartCursor*>(c);
  return SQLITE_OK;
}

// Whether a fixed cell can equal the constraint's value. Lenient: only a
// value of the same kind that differs (or a number text that parses to
// another number) rules the partition out; SQLite checks the rest.
bool may_equal(const Cell& cell, sqlite3_value* v) {
  int type = sqlite3_value_type(v);
  if (type == SQLITE_NULL) return false;
  if (cell.is_int() || cell.is_double()) {
    double x =
        cell.is_int() ? static_cast<double>(std::get<int64_t>(cell.v)) : std::get<double>(cell.v);
    if (type == SQLITE_INTEGER || type == SQLITE_FLOAT) return sqlite3_value_double(v) == x;
    if (type == SQLITE_TEXT) {
      const auto* t = reinterpret_cast<const char*>(sqlite3_value_text(v));
      char* end = nullptr;
      double parsed = std::strtod(t ? t : "", &end);
      if (end && end != t && *end == '\0') return parsed == x;
    }
    return true;
  }
  if (cell.is_text() && type == SQLITE_TEXT) {
    const auto* t = reinterpret_cast<const char*>(sqlite3_value_text(v));
    return cell.text() == (t ? t : "");
  }
  return true;
}

// Whether a fixed cell certainly equals the value (same kind, same value):
// only then does `<>` skip the partition.
bool surely_equal(const Cell& cell, sqlite3_value* v) {
  int type = sqlite3_value_type(v);
  if ((cell.is_int() || cell.is_double()) && (type == SQLITE_INTEGER || type == SQLITE_FLOAT)) {
    double x =
        cell.is_int() ? static_cast<double>(std::get<int64_t>(cell.v)) : std::get<double>(cell.v);
    return sqlite3_value_double(v) == x;
  }
  if (cell.is_text() && type == SQLITE_TEXT) {
    const auto* t = reinterpret_cast<const char*>(sqlite3_value_text(v));
    return cell.text() == (t ? t : "");
  }
  return false;
}

// A number, from a numeric cell or value, or from a text value that is a
// whole number literal (as SQLite's numeric affinity would read it).
bool as_number(const Cell& cell, double& out) {
  if (cell.is_int()) {
    out = static_cast<double>(std::get<int64_t>(cell.v));
    return true;
  }
  if (cell.is_double()) {
    out = std::get<double>(cell.v);
    return true;
  }
  return false;
}

bool value_number(sqlite3_value* v, double& out) {
  int type = sqlite3_value_type(v);
  if (type == SQLITE_INTEGER || type == SQLITE_FLOAT) {
    out = sqlite3_value_double(v);
    return true;
  }
  if (type == SQLITE_TEXT) {
    const auto* t = reinterpret_cast<const char*>(sqlite3_value_text(v));
    char* end = nullptr;
    out = std::strtod(t ? t : "", &end);
    return end && end != t && *end == '\0';
  }
  return false;
}

// `cell <op> value` ('<', 'l', '>', 'g') can hold. Only numbers against
// numbers (a numeric text value as the INTEGER column's affinity reads it)
// and text against text (BINARY order, which best_index requires) decide;
// anything else is left to SQLite.
bool may_order(char op, const Cell& cell, sqlite3_value* v) {
  if (sqlite3_value_type(v) == SQLITE_NULL) return false;  // a comparison with NULL is never true
  int cmp = 0;
  double x = 0, y = 0;
  if (as_number(cell, x)) {
    if (!value_number(v, y)) return true;
    cmp = x < y ? -1 : (x > y ? 1 : 0);
  } else if (cell.is_text() && sqlite3_value_type(v) == SQLITE_TEXT) {
    const auto* t = reinterpret_cast<const char*>(sqlite3_value_text(v));
    cmp = cell.text().compare(t ? t : "");
  } else {
    return true;
  }
  switch (op) {
    case '<':
      return cmp < 0;
    case 'l':
      return cmp <= 0;
    case '>':
      return cmp > 0;
    default:
      return cmp >= 0;
  }
}

bool ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// SQLite's LIKE (% any run, _ one character, ASCII case folded) or GLOB
// (* any run, ? one character, case kept) on ASCII text.
bool pattern_match(std::string_view p, std::string_view s, bool like) {
  char any = like ? '%' : '*', one = like ? '_' : '?';
  auto same = [like](char a, char b) {
    if (!like) return a == b;
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  };
  size_t pi = 0, si = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == any) {
      star = pi++;
      mark = si;
    } else if (pi < p.size() && (p[pi] == one || same(p[pi], s[si]))) {
      ++pi;
      ++si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == any) ++pi;
  return pi == p.size();
}

// `cell LIKE value` / `cell GLOB value` can hold: a number is matched as its
// text, as SQLite does; a pattern or text outside ASCII, or a GLOB character
// class, is left to SQLite.
bool may_match(bool like, const Cell& cell, sqlite3_value* v) {
  if (sqlite3_value_type(v) == SQLITE_NULL) return false;
  const auto* t = reinterpret_cast<const char*>(sqlite3_value_text(v));
  std::string_view pattern = t ? t : "";
  std::string text;
  if (cell.is_int())
    text = std::to_string(std::get<int64_t>(cell.v));
  else if (cell.is_text())
    text = cell.text();
  else
    return true;
  if (!ascii(pattern) || !ascii(text) || (!like && pattern.find('[') != std::string_view::npos))
    return true;
  return pattern_match(pattern, text, like);
}

// Whether partition cell `cell` can pass the constraint `code` with `value`.
bool partition_may_pass(char code, const Cell& cell, sqlite3_value* value) {
  switch (code) {
    case '=':
      return may_equal(cell, value);
    case '!':
      return !surely_equal(cell, value);
    case 'L':
    case 'G':
      return may_match(code == 'L', cell, value);
    default:
      return may_order(code, cell, value);
  }
}

// Opens the partition at pi and the following ones until one has a row.
void part_open_rows(PartCursor* c, const PartitionedTable& t) {
  for (; c->pi < c->parts.size(); ++c->pi) {
    c->source = t.bind(c->parts[c->pi]);
    c->row = 0;
    c->end = c->source->rows;
    if (c->keyed && c->source->key_column >= 0 && c->source->find_key) {
      c->end = 0;
      if (c->source->find_key)
        if (auto r = c->source->find_key(c->key)) {
          c->row = *r;
          c->end = *r + 1;
        }
    }
    if (c->row < c->end) return;
  }
  c->source.reset();
}

int part_error(sqlite3_vtab* v, const std::exception& e) {
  sqlite3_free(v->zErrMsg);
  v->zErrMsg = sqlite3_mprintf("%s", e.what());
  return SQLITE_ERROR;
}

int part_filter(sqlite3_vtab_cursor* cur, int, const char* idx_str, int argc,
                sqlite3_value** argv) {
  auto* c = reinterpret_cast<PartCursor*>(cur);
  const PartitionedTable& t = *reinterpret_cast<PartVTab*>(cur->pVtab)->table;
  std::vector<std::string> plan;
  for (std::string_view s = idx_str ? idx_str : ""; !s.empty();) {
    size_t comma = s.find(',');
    plan.emplace_back(s.substr(0, comma));
    s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
  }
  c->keyed = false;
  c->parts.clear();
  bool key_ok = true;
  for (int i = 0; i < argc && i < static_cast<int>(plan.size()); ++i)
    if (plan[static_cast<size_t>(i)] == "k") {
      c->keyed = true;
      int type = sqlite3_value_numeric_type(argv[i]);
      key_ok = type == SQLITE_INTEGER ||
               (type == SQLITE_FLOAT &&
                sqlite3_value_double(argv[i]) == static_cast<double>(sqlite3_value_int64(argv[i])));
      c->key = sqlite3_value_int64(argv[i]);
    }
  for (size_t p = 0; key_ok && p < t.partitions.size(); ++p) {
    bool keep = true;
    for (int i = 0; keep && i < argc && i < static_cast<int>(plan.size()); ++i) {
      const std::string& what = plan[static_cast<size_t>(i)];
      if (what == "k") continue;
      keep = partition_may_pass(what[0], t.partitions[p][std::stoul(what.substr(1))], argv[i]);
    }
    if (keep) c->parts.push_back(p);
  }
  c->pi = 0;
  c->rowid = 0;
  try {
    part_open_rows(c, t);
  } catch (const std::exception& e) {
    c->pi = c->parts.size();
    return part_error(cur->pVtab, e);
  }
  return SQLITE_OK;
}

int part_next(sqlite3_vtab_cursor* cur) {
  auto* c = reinterpret_cast<PartCursor*>(cur);
  ++c->rowid;
  if (++c->row < c->end) return SQLITE_OK;
  ++c->pi;
  try {
    part_open_rows(c, *reinterpret_cast<PartVTab*>(cur->pVtab)->table);
  } catch (const std::exception& e) {
    c->pi = c->parts.size();
    return part_error(cur->pVtab, e);
  }
  return SQLITE_OK;
}

int part_eof(sqlite3_vtab_cursor* cur) {
  auto* c = reinterpret_cast<PartCursor*>(cur);
  return c->pi >= c->parts.size();
}

int part_column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int column) {
  auto* c = reinterpret_cast<PartCursor*>(cur);
  const PartitionedTable& t = *reinterpret_cast<PartVTab*>(cur->pVtab)->table;
  ContextSink sink(ctx);
  try {
    auto col = static_cast<size_t>(column);
    if (col < t.fixed)
      sink.cell(t.partitions[c->parts[c->pi]][col]);
    else
      c->source->cell(c->row, column - static_cast<int>(t.fixed), sink);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
  return SQLITE_OK;
}

int part_rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* out) {
  *out = reinterpret_cast<PartCursor*>(cur)->rowid;
  return SQLITE_OK;
}

sqlite3_module partitioned_module() {
  sqlite3_module m{};
  m.iVersion = 1;
  m.xConnect = part_connect;
  m.xBestIndex = part_best_index;
  m.xDisconnect = part_disconnect;
  m.xDestroy = part_disconnect;
  m.xOpen = part_open;
  m.xClose = part_close;
  m.xFilter = part_filter;
  m.xNext = part_next;
  m.xEof = part_eof;
  m.xColumn = part_column;
  m.xRowid = part_rowid;
  return m;
}

// ---------------------------------------------------------------------------
// ancestors(uid): the table-valued function of an event's call-tree
// ancestors, nearest first (a GPU event's first ancestor is its launch call).
// ---------------------------------------------------------------------------

struct AncestorsVTab {
  sqlite3_vtab base{};
  const Connection::Module* m = nullptr;
  size_t fixed = 0;  // leading columns of the run (run, layout fields); 0 over one trace
  int first_arg() const { return static_cast<int>(fixed) + 7; }
  int args() const { return m->runs ? 2 : 1; }  // hidden: [in_run,] of
};

struct AncestorsCursor {
  sqlite3_vtab_cursor base{};
  TreeArg tree;
  std::vector<Uid> chain;
  size_t row = 0;
};

int anc_connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char** err) {
  auto* m = static_cast<Connection::Module*>(aux);
  std::string decl = "CREATE TABLE x(";
  size_t fixed = m->runs ? m->runs->fixed.size() : 0;
  for (size_t i = 0; i < fixed; ++i)
    decl +=
        quote_ident(m->runs->fixed[i].name) + " " + col_type_name(m->runs->fixed[i].type) + ", ";
  decl +=
      "uid INTEGER, name TEXT, category TEXT, ts INTEGER, dur INTEGER, \"end\" INTEGER, "
      "distance INTEGER, ";
  decl += m->runs ? "in_run HIDDEN, of HIDDEN)" : "of HIDDEN)";
  *m->declaring = true;
  int rc = sqlite3_declare_vtab(db, decl.c_str());
  *m->declaring = false;
  if (rc != SQLITE_OK) {
    *err = sqlite3_mprintf("ancestors: %s", sqlite3_errmsg(db));
    return rc;
  }
  sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
  auto* vt = new AncestorsVTab;
  vt->m = m;
  vt->fixed = fixed;
  *out = &vt->base;
  return SQLITE_OK;
}

int anc_disconnect(sqlite3_vtab* v) {
  delete reinterpret_cast<AncestorsVTab*>(v);
  return SQLITE_OK;
}

// Every argument (the hidden columns, in order) must be given by equality;
// without them there is no table (SQLite: "no query solution").
int anc_best_index(sqlite3_vtab* v, sqlite3_index_info* info) {
  const auto* vt = reinterpret_cast<AncestorsVTab*>(v);
  int found = 0;
  for (int arg = 0; arg < vt->args(); ++arg) {
    bool given = false;
    for (int i = 0; i < info->nConstraint && !given; ++i) {
      const auto& c = info->aConstraint[i];
      if (c.iColumn != vt->first_arg() + arg || c.op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
      if (!c.usable) return SQLITE_CONSTRAINT;  // another plan gives the argument first
      info->aConstraintUsage[i].argvIndex = arg + 1;
      info->aConstraintUsage[i].omit = 1;
      given = true;
    }
    if (!given) return SQLITE_CONSTRAINT;
    ++found;
  }
  info->idxNum = found;
  info->estimatedCost = 10;
  info->estimatedRows = 10;
  return SQLITE_OK;
}

int anc_open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  *out = &(new AncestorsCursor)->base;
  return SQLITE_OK;
}

int anc_close(sqlite3_vtab_cursor* c) {
  delete reinterpret_cast<AncestorsCursor*>(c);
  return SQLITE_OK;
}

int anc_filter(sqlite3_vtab_cursor* cur, int, const char*, int argc, sqlite3_value** argv) {
  auto* c = reinterpret_cast<AncestorsCursor*>(cur);
  const auto* vt = reinterpret_cast<AncestorsVTab*>(cur->pVtab);
  c->chain.clear();
  c->row = 0;
  c->tree = TreeArg{};
  if (argc != vt->args()) return SQLITE_OK;
  try {
    Uid u;
    if (!tree_arg(*vt->m, argv[0], c->tree, true) ||
        !uid_arg(argv[argc - 1], c->tree.qc->trace(), u))
      return SQLITE_OK;  // unknown run or uid: no rows
    const CallTree& tree = c->tree.qc->tree();
    for (Uid p = tree.parent(u); p != kNoUid; p = tree.parent(p)) c->chain.push_back(p);
  } catch (const std::exception& e) {
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg = sqlite3_mprintf("ancestors: %s", e.what());
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
}

int anc_next(sqlite3_vtab_cursor* cur) {
  ++reinterpret_cast<AncestorsCursor*>(cur)->row;
  return SQLITE_OK;
}

int anc_eof(sqlite3_vtab_cursor* cur) {
  auto* c = reinterpret_cast<AncestorsCursor*>(cur);
  return c->row >= c->chain.size();
}

int anc_column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int column) {
  auto* c = reinterpret_cast<AncestorsCursor*>(cur);
  const auto* vt = reinterpret_cast<AncestorsVTab*>(cur->pVtab);
  ContextSink sink(ctx);
  constexpr std::array kFields = {EventField::Uid, EventField::Name, EventField::Category,
                                  EventField::Ts,  EventField::Dur,  EventField::End};
  if (column < 0) {
    sink.null();
    return SQLITE_OK;
  }
  auto col = static_cast<size_t>(column);
  if (col < vt->fixed) {
    if (col < c->tree.cells.size())
      sink.cell(c->tree.cells[col]);
    else
      sink.null();
    return SQLITE_OK;
  }
  col -= vt->fixed;
  if (col < kFields.size())
    event_cell(c->tree.qc->trace(), c->chain[c->row], kFields[col], sink);
  else if (col == kFields.size())
    sink.integer(static_cast<int64_t>(c->row) + 1);
  else
    sink.null();
  return SQLITE_OK;
}

int anc_rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* out) {
  *out = static_cast<sqlite3_int64>(reinterpret_cast<AncestorsCursor*>(cur)->row);
  return SQLITE_OK;
}

sqlite3_module ancestors_module() {
  sqlite3_module m{};
  m.iVersion = 1;
  m.xConnect = anc_connect;
  m.xBestIndex = anc_best_index;
  m.xDisconnect = anc_disconnect;
  m.xDestroy = anc_disconnect;
  m.xOpen = anc_open;
  m.xClose = anc_close;
  m.xFilter = anc_filter;
  m.xNext = anc_next;
  m.xEof = anc_eof;
  m.xColumn = anc_column;
  m.xRowid = anc_rowid;
  return m;
}

// Functions of SQLite's own that read or write outside the query, or that
// change the connection, should a build carry them.
constexpr std::array kDeniedFunctions = {"load_extension", "readfile",        "writefile",
                                         "edit",           "fts3_tokenizer",  "zipfile",
                                         "sqlar_compress", "sqlar_uncompress"};
// Pragmas that only read the schema.
constexpr std::array kReadPragmas = {"table_info", "table_xinfo", "table_list"};

bool equals_nocase(const char* a, const char* b) {
  return a && b && sqlite3_stricmp(a, b) == 0;
}

}  // namespace

namespace {
std::atomic<int64_t> g_heap_limit_bytes{kDefaultHeapLimitBytes};
}  // namespace

void set_heap_limit_bytes(int64_t bytes) {
  g_heap_limit_bytes.store(std::max<int64_t>(bytes, 1 << 20));
}

int64_t heap_limit_bytes() {
  return g_heap_limit_bytes.load();
}

Connection::Connection(const QueryContext& ctx, bool attachable) : Connection(attachable) {
  ctx_ = &ctx;
}

Connection::Connection(bool attachable) {
  // SQLITE_OPEN_MEMORY holds for attached databases too: a query connection
  // could not reach a file even if ATTACH got past the authorizer.
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
  if (!attachable) flags |= SQLITE_OPEN_MEMORY;
  int rc = sqlite3_open_v2(":memory:", &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    throw std::runtime_error("sql: cannot open an in-memory database: " + msg);
  }
  sqlite3_db_config(db_, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_extended_result_codes(db_, 1);
  // Sorts and temp tables in memory, under the heap limit, not in unbounded
  // temp files (set before the authorizer, which refuses PRAGMA writes).
  sqlite3_hard_heap_limit64(heap_limit_bytes());
  sqlite3_exec(db_, "PRAGMA temp_store = MEMORY", nullptr, nullptr, nullptr);
  // LIKE, GLOB and instr() linear in their text: SQLite's own can spend
  // minutes inside one call, where no progress handler reaches them.
  register_linear_text_functions(db_);
}

Connection::~Connection() {
  sqlite3_close_v2(db_);
}

void Connection::add_table(const TableDef& def) {
  auto m = std::make_unique<Module>();
  m->name = def.name;
  m->columns = def.columns;
  if (!ctx_) throw std::logic_error("sql: table " + def.name + " needs a trace");
  m->bind = [&def, this] { return def.bind(*ctx_); };
  m->declaring = &declaring_;
  m->vt = read_only_module();
  if (sqlite3_create_module_v2(db_, m->name.c_str(), &m->vt, m.get(), nullptr) != SQLITE_OK)
    throw std::runtime_error("sql: cannot register table " + def.name + ": " + sqlite3_errmsg(db_));
  modules_.push_back(std::move(m));
}

void Connection::add_sheet(const std::string& name, std::shared_ptr<const Table> table) {
  auto m = std::make_unique<Module>();
  m->name = name;
  m->columns = sheet_columns(*table);
  m->bind = [table] { return sheet_source(table); };
  m->declaring = &declaring_;
  m->vt = read_only_module();
  if (sqlite3_create_module_v2(db_, m->name.c_str(), &m->vt, m.get(), nullptr) != SQLITE_OK)
    throw std::runtime_error("sql: cannot register sheet " + name + ": " + sqlite3_errmsg(db_));
  modules_.push_back(std::move(m));
}

void Connection::add_partitioned(std::shared_ptr<const PartitionedTable> table) {
  auto m = std::make_unique<Module>();
  m->name = table->name;
  m->columns = table->columns;
  m->parts = std::move(table);
  m->declaring = &declaring_;
  m->vt = partitioned_module();
  if (sqlite3_create_module_v2(db_, m->name.c_str(), &m->vt, m.get(), nullptr) != SQLITE_OK)
    throw std::runtime_error("sql: cannot register table " + m->name + ": " + sqlite3_errmsg(db_));
  modules_.push_back(std::move(m));
}

void Connection::add_functions(std::shared_ptr<const TreeRuns> runs) {
  const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
  sqlite3_create_function_v2(db_, "overlap", 4, flags, nullptr, fn_overlap, nullptr, nullptr,
                             nullptr);
  if (!ctx_ && !runs) return;  // the call-tree functions need a trace or runs
  auto m = std::make_unique<Module>();
  m->name = "ancestors";
  m->ctx = runs ? nullptr : ctx_;
  m->runs = std::move(runs);
  m->declaring = &declaring_;
  m->vt = ancestors_module();
  int extra = m->runs ? 1 : 0;  // the run argument
  sqlite3_create_function_v2(db_, "parent_uid", 1 + extra, flags, m.get(), fn_parent_uid, nullptr,
                             nullptr, nullptr);
  sqlite3_create_function_v2(db_, "is_ancestor", 2 + extra, flags, m.get(), fn_is_ancestor, nullptr,
                             nullptr, nullptr);
  if (sqlite3_create_module_v2(db_, "ancestors", &m->vt, m.get(), nullptr) != SQLITE_OK)
    throw std::runtime_error(std::string("sql: cannot register ancestors: ") + sqlite3_errmsg(db_));
  modules_.push_back(std::move(m));
}

void Connection::exec_trusted(const std::string& sql, const std::string& what) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw std::runtime_error(fmt::format("sql: setup {} failed: {}", what, msg));
  }
}

void Connection::attach(const std::string& path, const std::string& schema) {
  // The path is bound, not spliced into the SQL: any file name is safe.
  sqlite3_stmt* st = nullptr;
  std::string sql = "ATTACH ?1 AS " + quote_ident(schema);
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, path.c_str(), -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(st);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_OK && rc != SQLITE_DONE)
    throw std::runtime_error(fmt::format("sql: cannot open {}: {}", path, sqlite3_errmsg(db_)));
}

void exec_on_file(const std::string& path, const std::string& sql, const std::string& what) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
  char* err = nullptr;
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  std::string msg = err ? err : (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  sqlite3_free(err);
  sqlite3_close_v2(db);
  if (rc != SQLITE_OK) throw std::runtime_error(fmt::format("sql: {} in {}: {}", what, path, msg));
}

int Connection::progress(void* self) {
  auto* c = static_cast<Connection*>(self);
  if (c->cancel_ && c->cancel_->load()) {
    c->cancelled_ = true;
    return 1;
  }
  if (std::chrono::steady_clock::now() < c->deadline_) return 0;
  c->timed_out_ = true;
  return 1;
}

int Connection::authorize(void* self, int action, const char* a, const char* b, const char*,
                          const char*) {
  auto* c = static_cast<Connection*>(self);
  if (c->declaring_) return SQLITE_OK;  // our own table declaration (vt_connect)
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_FUNCTION:
      for (const char* f : kDeniedFunctions)
        if (equals_nocase(b, f)) {
          c->denied_ = fmt::format("function {}()", b);
          return SQLITE_DENY;
        }
      return SQLITE_OK;
    case SQLITE_PRAGMA:
      // A read pragma with no value (PRAGMA table_info(x) passes x as the
      // value, so only these names are allowed at all).
      for (const char* p : kReadPragmas)
        if (equals_nocase(a, p)) return SQLITE_OK;
      c->denied_ = fmt::format("PRAGMA {}", a ? a : "");
      return SQLITE_DENY;
    case SQLITE_ATTACH:
      c->denied_ = "ATTACH";
      return SQLITE_DENY;
    case SQLITE_DETACH:
      c->denied_ = "DETACH";
      return SQLITE_DENY;
    default:
      c->denied_ = "writing or changing the database";
      return SQLITE_DENY;
  }
}

void Connection::lock_down(std::chrono::steady_clock::time_point deadline, size_t max_value_bytes,
                           const std::atomic<bool>* cancelled) {
  deadline_ = deadline;
  cancel_ = cancelled;
  sqlite3_limit(db_, SQLITE_LIMIT_ATTACHED, 0);
  constexpr size_t kMinValueBytes = 1 << 20, kMaxValueBytes = 64 << 20;
  sqlite3_limit(db_, SQLITE_LIMIT_LENGTH,
                static_cast<int>(std::clamp(max_value_bytes, kMinValueBytes, kMaxValueBytes)));
  sqlite3_limit(db_, SQLITE_LIMIT_SQL_LENGTH, 1 << 20);
  sqlite3_set_authorizer(db_, &Connection::authorize, this);
  sqlite3_progress_handler(db_, 1000, &Connection::progress, this);
}

namespace {

struct Stmt {
  sqlite3_stmt* s = nullptr;
  ~Stmt() { sqlite3_finalize(s); }
};

bool only_space_or_semicolons(const char* p) {
  for (; p && *p; ++p)
    if (!std::isspace(static_cast<unsigned char>(*p)) && *p != ';') return false;
  return true;
}

// Column i of the current row as a cell, its size added to `bytes`.
// SQLite keeps whatever bytes a TEXT holds (CAST(x'ff00fe' AS TEXT)), while
// every surface writes JSON, CSV or XML, which need UTF-8: each bad byte
// becomes U+FFFD. A BLOB becomes its SQL hex literal x'ff00' (`blob` set), a
// text every surface can carry and a reader can tell by its column.
Cell column_cell(sqlite3_stmt* st, int i, size_t& bytes, bool& blob) {
  switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
      bytes += 8;
      return Cell(static_cast<int64_t>(sqlite3_column_int64(st, i)));
    case SQLITE_FLOAT:
      bytes += 8;
      return Cell(sqlite3_column_double(st, i));
    case SQLITE_TEXT: {
      const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
      const auto n = static_cast<size_t>(sqlite3_column_bytes(st, i));
      bytes += n;
      return Cell(valid_utf8(std::string_view(t ? t : "", t ? n : 0)));
    }
    case SQLITE_BLOB: {
      const auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(st, i));
      const int n = sqlite3_column_bytes(st, i);
      std::string hex = "x'";
      hex.reserve(static_cast<size_t>(n) * 2 + 3);
      for (int k = 0; k < n; ++k) hex += fmt::format("{:02x}", p[k]);
      hex += "'";
      bytes += hex.size();
      blob = true;
      return Cell(std::move(hex));
    }
    default:
      bytes += 1;
      return Cell();
  }
}

}  // namespace

QueryResult Connection::run(const std::string& sql, const QueryLimits& limits) {
  last_error_.clear();
  denied_.clear();
  timed_out_ = false;
  cancelled_ = false;
  Stmt st;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()), 0, &st.s, &tail);
  if (rc != SQLITE_OK) {
    if (cancelled_) throw QueryTimeout("query cancelled by the client");
    if (timed_out_)
      throw QueryTimeout(fmt::format("query stopped at the time limit ({} ms) while preparing",
                                     limits.timeout_ms));
    last_error_ = sqlite3_errmsg(db_);
    if ((rc & 0xff) == SQLITE_AUTH)
      throw QueryError(fmt::format("not allowed: {} (only reading SELECT queries run here)",
                                   denied_.empty() ? last_error_ : denied_));
    throw QueryError(last_error_);
  }
  if (!st.s) throw QueryError("the query is empty: give one SELECT statement");
  if (!only_space_or_semicolons(tail))
    throw QueryError("one statement per query: remove what follows the first ';'");
  if (!sqlite3_stmt_readonly(st.s))
    throw QueryError(
        "not allowed: the statement would change the database (only SELECT runs here)");

  QueryResult r;
  int ncol = sqlite3_column_count(st.s);
  for (int i = 0; i < ncol; ++i) {
    const char* n = sqlite3_column_name(st.s, i);
    r.table.columns.push_back(n ? n : "");
  }
  size_t bytes = 0;
  std::vector<bool> blob_column(static_cast<size_t>(ncol), false);
  while (true) {
    rc = sqlite3_step(st.s);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) {
      if (cancelled_) throw QueryTimeout("query cancelled by the client");
      if (timed_out_ || (rc & 0xff) == SQLITE_INTERRUPT)
        throw QueryTimeout(fmt::format(
            "query stopped at the time limit ({} ms); narrow it (WHERE on ts / uid, LIMIT) or "
            "raise the limit",
            limits.timeout_ms));
      if ((rc & 0xff) == SQLITE_NOMEM)
        throw QueryError(fmt::format(
            "the query needs more memory than SQLite may use here ({} MiB: its sorts, groups and "
            "values together); narrow it (WHERE, LIMIT, fewer or shorter columns)",
            heap_limit_bytes() >> 20));
      throw QueryError(sqlite3_errmsg(db_));
    }
    if (r.table.rows.size() >= limits.max_rows) {
      r.truncated = true;
      r.truncation = fmt::format("row limit {}", limits.max_rows);
      break;
    }
    std::vector<Cell> row;
    row.reserve(ncol);
    size_t row_bytes = 0;
    std::vector<size_t> blobs;
    for (int i = 0; i < ncol; ++i) {
      bool blob = false;
      row.push_back(column_cell(st.s, i, row_bytes, blob));
      if (blob) blobs.push_back(static_cast<size_t>(i));
    }
    if (bytes + row_bytes > limits.max_bytes) {
      r.truncated = true;
      r.truncation = fmt::format("byte limit {}", limits.max_bytes);
      break;
    }
    bytes += row_bytes;
    r.table.rows.push_back(std::move(row));
    for (size_t i : blobs) blob_column[i] = true;
  }
  for (size_t i = 0; i < blob_column.size(); ++i)
    if (blob_column[i]) r.blob_columns.push_back(r.table.columns[i]);
  return r;
}

}  // namespace jarvis::sql
