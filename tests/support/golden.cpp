#include "golden.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>

namespace jarvis::golden {

namespace {

// A parsed cell: the subset of Python literals pandas writes.
struct LitEntry;

struct Lit {
  enum class Kind { Missing, Bool, Number, String, Tuple, List, Dict, Text };
  Kind kind = Kind::Missing;
  bool b = false;
  double num = 0;
  bool integral = false;   // number written without '.', 'e', inf or nan
  std::string s;           // String value or raw Text
  std::vector<Lit> items;  // Tuple / List elements
  // Dict, in written order. A named struct, not std::pair<Lit, Lit>: a pair
  // needs Lit complete here (clang refuses; GCC let it pass).
  std::vector<LitEntry> entries;
};

struct LitEntry {
  Lit key, value;
};

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Decimal number as Python/pandas print them: [-+]digits[.digits][e[-+]digits],
// also inf / nan. Returns the consumed length, 0 if not a number.
size_t scan_number(std::string_view s, double& out, bool& integral) {
  size_t k = 0;
  if (k < s.size() && (s[k] == '-' || s[k] == '+')) ++k;
  for (std::string_view word : {"inf", "nan"}) {
    if (s.substr(k, word.size()) == word) {
      bool neg = s[0] == '-';
      out = word == "inf" ? (neg ? -INFINITY : INFINITY) : NAN;
      integral = false;
      return k + word.size();
    }
  }
  size_t digits_start = k;
  while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) ++k;
  size_t int_digits = k - digits_start;
  integral = true;
  size_t frac_digits = 0;
  if (k < s.size() && s[k] == '.') {
    integral = false;
    ++k;
    size_t f0 = k;
    while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) ++k;
    frac_digits = k - f0;
  }
  if (int_digits + frac_digits == 0) return 0;
  if (k < s.size() && (s[k] == 'e' || s[k] == 'E')) {
    size_t e = k + 1;
    if (e < s.size() && (s[e] == '-' || s[e] == '+')) ++e;
    size_t e0 = e;
    while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) ++e;
    if (e > e0) {
      integral = false;
      k = e;
    }
  }
  std::string text(s.substr(0, k));
  out = std::strtod(text.c_str(), nullptr);
  return k;
}

// Recursive-descent parser over one cell's text.
class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  std::optional<Lit> parse_all() {
    auto v = value(0);
    skip_ws();
    if (!v || pos_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;

  void skip_ws() {
    while (pos_ < s_.size() && is_space(s_[pos_])) ++pos_;
  }
  bool eat(char c) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool eat_word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    size_t end = pos_ + w.size();
    if (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_'))
      return false;
    pos_ = end;
    return true;
  }

  std::optional<Lit> value(int depth) {
    if (depth > 64) return std::nullopt;
    skip_ws();
    if (pos_ >= s_.size()) return std::nullopt;
    char c = s_[pos_];
    Lit lit;
    if (c == '\'' || c == '"') return string();
    if (c == '(' || c == '[') return sequence(depth, c);
    if (c == '{') return dict(depth);
    if (eat_word("None")) return lit;  // Missing
    if (eat_word("True")) return bool_lit(true);
    if (eat_word("False")) return bool_lit(false);
    // NumPy scalar wrappers: np.float64(1.5), np.int64(3), np.True_ ...
    for (std::string_view w : {"np.", "numpy."}) {
      if (s_.substr(pos_, w.size()) == w) return numpy_scalar(depth, w.size());
    }
    double num;
    bool integral;
    size_t n = scan_number(s_.substr(pos_), num, integral);
    if (n == 0) return std::nullopt;
    pos_ += n;
    if (std::isnan(num)) return lit;  // nan == missing
    lit.kind = Lit::Kind::Number;
    lit.num = num;
    lit.integral = integral;
    return lit;
  }

  std::optional<Lit> numpy_scalar(int depth, size_t prefix) {
    pos_ += prefix;
    if (eat_word("True_")) return bool_lit(true);
    if (eat_word("False_")) return bool_lit(false);
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      ++pos_;
    if (!eat('(')) return std::nullopt;
    auto inner = value(depth + 1);
    if (!inner || !eat(')')) return std::nullopt;
    return inner;
  }

  static Lit bool_lit(bool v) {
    Lit lit;
    lit.kind = Lit::Kind::Bool;
    lit.b = v;
    return lit;
  }

  std::optional<Lit> string() {
    char quote = s_[pos_++];
    Lit lit;
    lit.kind = Lit::Kind::String;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      char c = s_[pos_++];
      if (c != '\\') {
        lit.s += c;
        continue;
      }
      if (pos_ >= s_.size()) return std::nullopt;
      char e = s_[pos_++];
      switch (e) {
        case 'n':
          lit.s += '\n';
          break;
        case 't':
          lit.s += '\t';
          break;
        case 'r':
          lit.s += '\r';
          break;
        case '\\':
          lit.s += '\\';
          break;
        case '\'':
          lit.s += '\'';
          break;
        case '"':
          lit.s += '"';
          break;
        default:  // keep unknown escapes (\xNN, \uNNNN) verbatim
          lit.s += '\\';
          lit.s += e;
      }
    }
    if (pos_ >= s_.size()) return std::nullopt;
    ++pos_;
    return lit;
  }

  std::optional<Lit> sequence(int depth, char open) {
    char close = open == '(' ? ')' : ']';
    ++pos_;
    Lit lit;
    lit.kind = open == '(' ? Lit::Kind::Tuple : Lit::Kind::List;
    if (eat(close)) return lit;
    while (true) {
      auto item = value(depth + 1);
      if (!item) return std::nullopt;
      lit.items.push_back(std::move(*item));
      if (eat(close)) return lit;
      if (!eat(',')) return std::nullopt;
      if (eat(close)) return lit;  // trailing comma: (1,)
    }
  }

  std::optional<Lit> dict(int depth) {
    ++pos_;
    Lit lit;
    lit.kind = Lit::Kind::Dict;
    if (eat('}')) return lit;
    while (true) {
      auto key = value(depth + 1);
      if (!key || !eat(':')) return std::nullopt;
      auto val = value(depth + 1);
      if (!val) return std::nullopt;
      lit.entries.push_back(LitEntry{std::move(*key), std::move(*val)});
      if (eat('}')) return lit;
      if (!eat(',')) return std::nullopt;
      if (eat('}')) return lit;
    }
  }
};

Lit parse_cell(std::string_view text) {
  std::string_view t = trim(text);
  if (t.empty()) return {};
  if (auto lit = Parser(t).parse_all()) return *lit;
  Lit raw;
  raw.kind = Lit::Kind::Text;
  raw.s = std::string(text);
  return raw;
}

bool numbers_equal(double a, double b, double rel_tol) {
  if (a == b) return true;
  if (std::isinf(a) || std::isinf(b)) return false;
  double diff = std::fabs(a - b);
  double scale = std::max(std::fabs(a), std::fabs(b));
  return diff <= rel_tol * scale || diff <= 1e-9;
}

std::string canonical(const Lit& v);

bool lits_equal(const Lit& a, const Lit& b, double rel_tol) {
  using K = Lit::Kind;
  // A string cell holding the text of the other side (rare pandas quirk) is
  // not treated as equal: type differences are real differences.
  if (a.kind != b.kind) {
    bool texts =
        (a.kind == K::Text || a.kind == K::String) && (b.kind == K::Text || b.kind == K::String);
    return texts && a.s == b.s;
  }
  switch (a.kind) {
    case K::Missing:
      return true;
    case K::Bool:
      return a.b == b.b;
    case K::Number:
      return numbers_equal(a.num, b.num, rel_tol);
    case K::String:
    case K::Text:
      return a.s == b.s;
    case K::Tuple:
    case K::List:
      if (a.items.size() != b.items.size()) return false;
      for (size_t k = 0; k < a.items.size(); ++k)
        if (!lits_equal(a.items[k], b.items[k], rel_tol)) return false;
      return true;
    case K::Dict: {
      if (a.entries.size() != b.entries.size()) return false;
      std::map<std::string, const Lit*> by_key;
      for (const auto& [k, v] : b.entries) by_key[canonical(k)] = &v;
      for (const auto& [k, v] : a.entries) {
        auto it = by_key.find(canonical(k));
        if (it == by_key.end() || !lits_equal(v, *it->second, rel_tol)) return false;
      }
      return true;
    }
  }
  return false;
}

// Stable text for a value, used as a matching key: numbers in a fixed
// 12-significant-digit form so 1 and 1.0 (or tiny float noise) agree.
std::string canonical(const Lit& v) {
  using K = Lit::Kind;
  switch (v.kind) {
    case K::Missing:
      return "<missing>";
    case K::Bool:
      return v.b ? "True" : "False";
    case K::Number:
      return fmt::format("{:.12g}", v.num);
    case K::String:
      return "'" + v.s + "'";
    case K::Text:
      return v.s;
    case K::Tuple:
    case K::List: {
      std::string out = v.kind == K::Tuple ? "(" : "[";
      for (const auto& item : v.items) out += canonical(item) + ",";
      return out + (v.kind == K::Tuple ? ")" : "]");
    }
    case K::Dict: {
      std::vector<std::string> parts;
      for (const auto& [k, val] : v.entries) parts.push_back(canonical(k) + ":" + canonical(val));
      std::sort(parts.begin(), parts.end());
      std::string out = "{";
      for (const auto& p : parts) out += p + ",";
      return out + "}";
    }
  }
  return "";
}

std::string shorten(std::string_view s, size_t n = 160) {
  if (s.size() <= n) return std::string(s);
  return std::string(s.substr(0, n)) + "...";
}

struct Comparison {
  const Options& options;
  Result& result;

  void problem(std::string text) {
    ++result.problem_count;
    if (result.problems.size() < options.max_problems) result.problems.push_back(std::move(text));
  }
};

bool int_float_mismatch(const Lit& e, const Lit& a) {
  return e.kind == Lit::Kind::Number && a.kind == Lit::Kind::Number && e.integral != a.integral &&
         std::isfinite(e.num) && std::isfinite(a.num);
}

}  // namespace

bool cells_equal(std::string_view expected, std::string_view actual, double rel_tol) {
  return lits_equal(parse_cell(expected), parse_cell(actual), rel_tol);
}

bool Result::ok() const {
  return header_equal && problem_count == 0 && matched_rows == expected_rows;
}

std::string Result::summary() const {
  std::string out = fmt::format("{}/{} rows matched ({} actual rows){}", matched_rows,
                                expected_rows, actual_rows, header_equal ? "" : ", header differs");
  if (problem_count) out += fmt::format(", {} problems", problem_count);
  for (const auto& p : problems) out += "\n  " + p;
  return out;
}

std::string cell_text(const Table& table, size_t row, size_t col) {
  return table.rows[row][col].to_csv_text(table.column_is_float(col));
}

namespace {

// Text of every cell of a table, float columns resolved once.
std::vector<std::vector<std::string>> all_cell_texts(const Table& t) {
  std::vector<bool> as_float(t.columns.size());
  for (size_t c = 0; c < t.columns.size(); ++c) as_float[c] = t.column_is_float(c);
  std::vector<std::vector<std::string>> out(t.rows.size());
  for (size_t r = 0; r < t.rows.size(); ++r) {
    out[r].resize(t.columns.size());
    for (size_t c = 0; c < t.columns.size() && c < t.rows[r].size(); ++c)
      out[r][c] = t.rows[r][c].to_csv_text(as_float[c]);
  }
  return out;
}

std::string row_key(const std::vector<Lit>& parsed_row, const std::vector<int>& key_cols) {
  std::string key;
  for (int c : key_cols) key += (c < 0 ? "<absent>" : canonical(parsed_row[c])) + "\x1f";
  return key;
}

}  // namespace

Result compare_tables(const Table& expected, const Table& actual, const Options& options) {
  Result result;
  Comparison cmp{options, result};
  result.expected_rows = expected.rows.size();
  result.actual_rows = actual.rows.size();
  auto ignored = [&](const std::string& c) {
    return std::find(options.ignore_columns.begin(), options.ignore_columns.end(), c) !=
           options.ignore_columns.end();
  };

  // Header: same columns in the same order, ignored ones left out.
  std::vector<std::string> exp_cols, act_cols;
  for (const auto& c : expected.columns)
    if (!ignored(c)) exp_cols.push_back(c);
  for (const auto& c : actual.columns)
    if (!ignored(c)) act_cols.push_back(c);
  result.header_equal = exp_cols == act_cols;
  if (!result.header_equal) {
    for (const auto& c : exp_cols)
      if (actual.col(c) < 0) cmp.problem("missing column '" + c + "'");
    for (const auto& c : act_cols)
      if (expected.col(c) < 0) cmp.problem("unexpected column '" + c + "'");
    if (result.problem_count == 0) cmp.problem("column order differs");
  }

  // Columns compared: those present on both sides.
  std::vector<std::pair<int, int>> compared;  // (expected col, actual col)
  for (const auto& c : exp_cols)
    if (int a = actual.col(c); a >= 0) compared.emplace_back(expected.col(c), a);

  auto exp_text = all_cell_texts(expected);
  auto act_text = all_cell_texts(actual);
  auto parse_rows = [](const std::vector<std::vector<std::string>>& text) {
    std::vector<std::vector<Lit>> out(text.size());
    for (size_t r = 0; r < text.size(); ++r)
      for (const auto& cell : text[r]) out[r].push_back(parse_cell(cell));
    return out;
  };
  auto exp_lit = parse_rows(exp_text);
  auto act_lit = parse_rows(act_text);

  // Pair expected rows with actual rows.
  std::vector<std::optional<size_t>> partner(expected.rows.size());
  std::vector<bool> used(actual.rows.size(), false);
  if (options.key_columns.empty()) {
    for (size_t r = 0; r < expected.rows.size() && r < actual.rows.size(); ++r) {
      partner[r] = r;
      used[r] = true;
    }
  } else {
    std::vector<int> ekeys, akeys;
    for (const auto& k : options.key_columns) {
      ekeys.push_back(expected.col(k));
      akeys.push_back(actual.col(k));
      if (expected.col(k) < 0 || actual.col(k) < 0) cmp.problem("key column '" + k + "' absent");
    }
    std::map<std::string, std::vector<size_t>> by_key;
    for (size_t r = 0; r < actual.rows.size(); ++r) by_key[row_key(act_lit[r], akeys)].push_back(r);
    std::map<std::string, size_t> next;
    for (size_t r = 0; r < expected.rows.size(); ++r) {
      std::string key = row_key(exp_lit[r], ekeys);
      auto it = by_key.find(key);
      size_t& n = next[key];
      if (it == by_key.end() || n >= it->second.size()) {
        std::string shown;
        for (int c : ekeys) shown += (c < 0 ? std::string("?") : exp_text[r][c]) + " | ";
        cmp.problem(fmt::format("expected row {} (key {}) has no actual row", r, shorten(shown)));
        continue;
      }
      partner[r] = it->second[n++];
      used[*partner[r]] = true;
    }
  }
  if (!options.allow_extra_rows) {
    size_t extra = 0;
    for (size_t r = 0; r < used.size(); ++r) {
      if (used[r]) continue;
      if (extra++ < 3) {
        std::string shown;
        for (size_t c = 0; c < act_text[r].size() && c < 4; ++c) shown += act_text[r][c] + " | ";
        cmp.problem(fmt::format("unexpected actual row {}: {}", r, shorten(shown)));
      }
    }
    if (extra > 3) cmp.problem(fmt::format("... {} unexpected actual rows in all", extra));
  }

  for (size_t r = 0; r < expected.rows.size(); ++r) {
    if (!partner[r]) {
      if (options.key_columns.empty())
        cmp.problem(
            fmt::format("expected row {} missing (actual has {} rows)", r, actual.rows.size()));
      continue;
    }
    size_t a = *partner[r];
    bool row_ok = true;
    for (auto [ec, ac] : compared) {
      const Lit& e = exp_lit[r][ec];
      const Lit& x = act_lit[a][ac];
      bool same = lits_equal(e, x, options.rel_tol);
      if (same && options.check_int_float && int_float_mismatch(e, x)) {
        same = false;
      }
      if (same) continue;
      row_ok = false;
      cmp.problem(fmt::format("row {} (actual {}) column '{}': expected '{}' got '{}'", r, a,
                              expected.columns[ec], shorten(exp_text[r][ec]),
                              shorten(act_text[a][ac])));
    }
    if (row_ok) ++result.matched_rows;
  }
  return result;
}

Result compare_csv_files(const std::string& expected_path, const std::string& actual_path,
                         const Options& options) {
  return compare_tables(read_csv_file(expected_path), read_csv_file(actual_path), options);
}

std::string configured_shared_dir() {
  if (const char* env = std::getenv("JARVIS_SHARED_DIR"); env && *env) return env;
#ifdef JARVIS_SHARED_DIR
  return JARVIS_SHARED_DIR;
#else
  return "/work/shared";
#endif
}

std::string repository_shared_copy() {
  return std::string(JARVIS_SOURCE_DIR) + "/tests/data/shared";
}

std::string shared_dir() {
  std::string configured = configured_shared_dir();
  std::error_code ec;
  return std::filesystem::is_directory(configured, ec) ? configured : repository_shared_copy();
}

std::vector<std::string> shared_kineto_traces() {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  const std::string root = shared_dir();
  for (const std::string sub : {"ab_pairs", "hw_pairs", "conformance", "legacy"}) {
    if (!fs::exists(root + "/" + sub)) continue;
    for (const auto& f : fs::recursive_directory_iterator(root + "/" + sub)) {
      const std::string p = f.path().string();
      if (p.ends_with(".json.gz") && p.find("/tracelens") == std::string::npos) out.push_back(p);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> conformance_dirs() {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  fs::path root = fs::path(shared_dir()) / "conformance";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_directory()) continue;
    if (fs::exists(entry.path() / "trace.json.gz")) out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace jarvis::golden
