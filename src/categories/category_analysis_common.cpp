#include "categories/category_analysis_common.h"

#include "perf/perf_model.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "trace/value.h"

namespace jarvis::analysis {

// ---------------------------------------------------------------------------
// Python literals
// ---------------------------------------------------------------------------

bool PyLit::truthy() const {
  switch (kind) {
    case Kind::None:
      return false;
    case Kind::Bool:
      return b;
    case Kind::Int:
      return i != 0;
    case Kind::Float:
      return f != 0.0;  // NaN is truthy, as in Python
    case Kind::Str:
      return !s.empty();
    case Kind::List:
    case Kind::Tuple:
      return !items.empty();
    case Kind::Dict:
      return !entries.empty();
  }
  return false;
}

const PyLit* PyLit::get(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k.kind == Kind::Str && k.s == key) return &v;
  return nullptr;
}

std::string PyLit::repr() const {
  switch (kind) {
    case Kind::None:
      return "None";
    case Kind::Bool:
      return b ? "True" : "False";
    case Kind::Int:
      return std::to_string(i);
    case Kind::Float:
      return py_float_repr(f);
    case Kind::Str:
      return py_str_repr(s);
    case Kind::List:
    case Kind::Tuple: {
      bool tuple = kind == Kind::Tuple;
      std::string out = tuple ? "(" : "[";
      for (size_t k = 0; k < items.size(); ++k) {
        if (k) out += ", ";
        out += items[k].repr();
      }
      if (tuple && items.size() == 1) out += ",";
      out += tuple ? ")" : "]";
      return out;
    }
    case Kind::Dict: {
      std::string out = "{";
      for (size_t k = 0; k < entries.size(); ++k) {
        if (k) out += ", ";
        out += entries[k].first.repr() + ": " + entries[k].second.repr();
      }
      return out + "}";
    }
  }
  return "";
}

std::string PyLit::str() const {
  return kind == Kind::Str ? s : repr();
}

ojson PyLit::to_json() const {
  switch (kind) {
    case Kind::None:
      return nullptr;
    case Kind::Bool:
      return b;
    case Kind::Int:
      return i;
    case Kind::Float:
      return f;
    case Kind::Str:
      return s;
    case Kind::List:
    case Kind::Tuple: {
      ojson arr = ojson::array();
      for (const auto& item : items) arr.push_back(item.to_json());
      return arr;
    }
    case Kind::Dict: {
      ojson obj = ojson::object();
      for (const auto& [k, v] : entries) obj[k.str()] = v.to_json();
      return obj;
    }
  }
  return nullptr;
}

namespace {

class LiteralParser {
 public:
  explicit LiteralParser(std::string_view text) : t_(text) {}

  PyLit parse_all() {
    PyLit v = value();
    skip_ws();
    if (p_ != t_.size()) fail("trailing characters");
    return v;
  }

 private:
  std::string_view t_;
  size_t p_ = 0;
  int depth_ = 0;

  [[noreturn]] void fail(const char* what) const {
    throw std::invalid_argument(std::string("not a Python literal (") + what + " at offset " +
                                std::to_string(p_) + ")");
  }
  void skip_ws() {
    while (p_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[p_]))) ++p_;
  }
  bool starts_with(std::string_view w) const { return t_.substr(p_, w.size()) == w; }
  bool ident_char(size_t q) const {
    return q < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[q])) || t_[q] == '_');
  }
  bool keyword(std::string_view w) {
    if (!starts_with(w) || ident_char(p_ + w.size())) return false;
    p_ += w.size();
    return true;
  }

  PyLit value() {
    if (++depth_ > 200) fail("nesting too deep");
    skip_ws();
    if (p_ >= t_.size()) fail("unexpected end");
    PyLit v;
    char c = t_[p_];
    if (c == '(' || c == '[') {
      v = sequence(c == '(' ? ')' : ']', c == '(');
    } else if (c == '{') {
      v = dict();
    } else if (c == '\'' || c == '"') {
      v.kind = PyLit::Kind::Str;
      v.s = string_lit();
      // Adjacent string literals concatenate.
      for (skip_ws(); p_ < t_.size() && (t_[p_] == '\'' || t_[p_] == '"'); skip_ws())
        v.s += string_lit();
    } else if (keyword("None")) {
      v.kind = PyLit::Kind::None;
    } else if (keyword("True")) {
      v.kind = PyLit::Kind::Bool;
      v.b = true;
    } else if (keyword("False")) {
      v.kind = PyLit::Kind::Bool;
      v.b = false;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      v = numpy_wrapper();
    } else {
      v = number();
    }
    --depth_;
    return v;
  }

  // np.float64(1.5), np.int64(3), numpy.float32(2.0): the wrapped number.
  PyLit numpy_wrapper() {
    size_t start = p_;
    while (p_ < t_.size() && (ident_char(p_) || t_[p_] == '.')) ++p_;
    std::string_view name = t_.substr(start, p_ - start);
    if (!(name.starts_with("np.") || name.starts_with("numpy."))) fail("unknown name");
    skip_ws();
    if (p_ >= t_.size() || t_[p_] != '(') fail("expected (");
    ++p_;
    PyLit inner = value();
    skip_ws();
    if (p_ >= t_.size() || t_[p_] != ')') fail("expected )");
    ++p_;
    if (name.find("float") != std::string_view::npos && inner.kind == PyLit::Kind::Int) {
      inner.kind = PyLit::Kind::Float;
      inner.f = static_cast<double>(inner.i);
    }
    return inner;
  }

  PyLit sequence(char close, bool paren) {
    ++p_;
    PyLit v;
    v.kind = paren ? PyLit::Kind::Tuple : PyLit::Kind::List;
    bool saw_comma = false;
    skip_ws();
    while (true) {
      skip_ws();
      if (p_ >= t_.size()) fail("unterminated sequence");
      if (t_[p_] == close) {
        ++p_;
        break;
      }
      v.items.push_back(value());
      skip_ws();
      if (p_ < t_.size() && t_[p_] == ',') {
        ++p_;
        saw_comma = true;
      } else if (p_ >= t_.size() || t_[p_] != close) {
        fail("expected , or closing bracket");
      }
    }
    // "(x)" is just x.
    if (paren && v.items.size() == 1 && !saw_comma) return v.items[0];
    return v;
  }

  PyLit dict() {
    ++p_;
    PyLit v;
    v.kind = PyLit::Kind::Dict;
    while (true) {
      skip_ws();
      if (p_ >= t_.size()) fail("unterminated dict");
      if (t_[p_] == '}') {
        ++p_;
        break;
      }
      PyLit key = value();
      skip_ws();
      if (p_ >= t_.size() || t_[p_] != ':') fail("expected :");
      ++p_;
      PyLit val = value();
      v.entries.emplace_back(std::move(key), std::move(val));
      skip_ws();
      if (p_ < t_.size() && t_[p_] == ',')
        ++p_;
      else if (p_ >= t_.size() || t_[p_] != '}')
        fail("expected , or }");
    }
    return v;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  uint32_t hex_digits(int n) {
    if (p_ + n > t_.size()) fail("short escape");
    uint32_t cp = 0;
    for (int k = 0; k < n; ++k) {
      char h = t_[p_++];
      cp <<= 4;
      if (h >= '0' && h <= '9')
        cp |= h - '0';
      else if (h >= 'a' && h <= 'f')
        cp |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F')
        cp |= h - 'A' + 10;
      else
        fail("bad hex escape");
    }
    return cp;
  }

  std::string string_lit() {
    char q = t_[p_++];
    std::string out;
    while (true) {
      if (p_ >= t_.size()) fail("unterminated string");
      char c = t_[p_++];
      if (c == q) break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p_ >= t_.size()) fail("unterminated escape");
      char e = t_[p_++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case '0':
          out += '\0';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'v':
          out += '\v';
          break;
        case 'x':
          append_utf8(out, hex_digits(2));
          break;
        case 'u':
          append_utf8(out, hex_digits(4));
          break;
        case 'U':
          append_utf8(out, hex_digits(8));
          break;
        case '\n':
          break;
        default:
          out += e;
          break;  // \\ \' \" and unknown escapes
      }
    }
    return out;
  }

  PyLit number() {
    size_t start = p_;
    if (t_[p_] == '-' || t_[p_] == '+') ++p_;
    skip_ws();
    size_t digits_start = p_;
    bool is_float = false;
    while (p_ < t_.size()) {
      char c = t_[p_];
      if (std::isdigit(static_cast<unsigned char>(c)) || c == '_') {
        ++p_;
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
        ++p_;
        if ((c == 'e' || c == 'E') && p_ < t_.size() && (t_[p_] == '-' || t_[p_] == '+')) ++p_;
      } else {
        break;
      }
    }
    if (p_ == digits_start) fail("expected a value");
    std::string text;
    for (size_t k = start; k < p_; ++k)
      if (t_[k] != '_' && !std::isspace(static_cast<unsigned char>(t_[k]))) text += t_[k];
    PyLit v;
    char* end = nullptr;
    if (!is_float) {
      errno = 0;
      long long x = std::strtoll(text.c_str(), &end, 10);
      if (errno == 0 && end && *end == '\0') {
        v.kind = PyLit::Kind::Int;
        v.i = x;
        return v;
      }
    }
    v.kind = PyLit::Kind::Float;
    v.f = std::strtod(text.c_str(), &end);
    if (!end || *end != '\0') fail("bad number");
    return v;
  }
};

}  // namespace

PyLit parse_py_literal(std::string_view text) {
  return LiteralParser(text).parse_all();
}

std::optional<PyLit> try_parse_py_literal(std::string_view text) {
  try {
    return parse_py_literal(text);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

// ---------------------------------------------------------------------------
// pandas-like typing of CSV cells
// ---------------------------------------------------------------------------

namespace {

bool is_na_text(const std::string& s) {
  static const char* const kNa[] = {"",     "nan",    "NaN",     "NA",       "N/A",     "NULL",
                                    "None", "null",   "n/a",     "<NA>",     "#N/A",    "-NaN",
                                    "-nan", "1.#IND", "1.#QNAN", "#N/A N/A", "-1.#IND", "-1.#QNAN"};
  for (const char* na : kNa)
    if (s == na) return true;
  return false;
}

bool parse_int_text(const std::string& s, int64_t& out) {
  if (s.empty()) return false;
  size_t k = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (k == s.size()) return false;
  for (size_t j = k; j < s.size(); ++j)
    if (!std::isdigit(static_cast<unsigned char>(s[j]))) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0) return false;
  out = v;
  return true;
}

// pandas' default CSV float parser (precise_xstrtod): at most 17 significant
// digits (leading zeros included) accumulated in a double, then one scaling
// by an exact power of ten. Not always correctly rounded; reproduced so the
// values match what TraceLens computed from the same CSV text.
bool pandas_xstrtod(const std::string& s, double& out) {
  static const std::vector<double> kPow10 = [] {
    std::vector<double> e(309);
    for (int k = 0; k <= 308; ++k) e[k] = std::strtod(("1e" + std::to_string(k)).c_str(), nullptr);
    return e;
  }();
  size_t p = 0;
  bool negative = false;
  if (p < s.size() && (s[p] == '-' || s[p] == '+')) negative = s[p++] == '-';
  double number = 0;
  int exponent = 0, num_digits = 0, num_decimals = 0;
  constexpr int kMaxDigits = 17;
  auto digit = [&](size_t q) {
    return q < s.size() && std::isdigit(static_cast<unsigned char>(s[q]));
  };
  for (; digit(p); ++p) {
    if (num_digits < kMaxDigits) {
      number = number * 10. + (s[p] - '0');
      ++num_digits;
    } else {
      ++exponent;
    }
  }
  if (p < s.size() && s[p] == '.') {
    ++p;
    for (; num_digits < kMaxDigits && digit(p); ++p) {
      number = number * 10. + (s[p] - '0');
      ++num_digits;
      ++num_decimals;
    }
    while (digit(p)) ++p;
    exponent -= num_decimals;
  }
  if (num_digits == 0) return false;
  if (negative) number = -number;
  if (p < s.size() && (s[p] == 'e' || s[p] == 'E')) {
    ++p;
    bool neg_exp = false;
    if (p < s.size() && (s[p] == '-' || s[p] == '+')) neg_exp = s[p++] == '-';
    if (!digit(p)) return false;
    int n = 0;
    for (; digit(p); ++p) n = std::min(n * 10 + (s[p] - '0'), 100000);
    exponent += neg_exp ? -n : n;
  }
  if (p != s.size()) return false;
  if (exponent > 308) {
    number = negative ? -HUGE_VAL : HUGE_VAL;
  } else if (exponent > 0) {
    number *= kPow10[exponent];
  } else if (exponent < -308) {
    if (exponent < -616) {
      number = 0.;
    } else {
      number /= kPow10[-308 - exponent];
      number /= kPow10[308];
    }
  } else {
    number /= kPow10[-exponent];
  }
  out = number;
  return true;
}

bool parse_float_text(const std::string& s, double& out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  if (s == "inf" || s == "+inf" || s == "Infinity" || s == "+Infinity") {
    out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == "-inf" || s == "-Infinity") {
    out = -std::numeric_limits<double>::infinity();
    return true;
  }
  return pandas_xstrtod(s, out);
}

bool is_true_text(const std::string& s) {
  return s == "True" || s == "TRUE" || s == "true";
}
bool is_false_text(const std::string& s) {
  return s == "False" || s == "FALSE" || s == "false";
}

enum class ColType { Int, Float, Bool, Text };

ColType infer_column(const Table& t, size_t c) {
  bool all_int = true, all_num = true, all_bool = true, any_na = false, any_value = false;
  for (const auto& row : t.rows) {
    const Cell& cell = row[c];
    std::string s = cell.is_text() ? cell.text() : cell.to_csv_text(false);
    if (cell.missing() || is_na_text(s)) {
      any_na = true;
      continue;
    }
    any_value = true;
    int64_t i;
    double d;
    if (!parse_int_text(s, i)) all_int = false;
    if (!all_int && !parse_float_text(s, d)) all_num = false;
    if (!is_true_text(s) && !is_false_text(s)) all_bool = false;
  }
  if (!any_value) return ColType::Float;  // all-NaN column
  if (all_int) return any_na ? ColType::Float : ColType::Int;
  if (all_num) return ColType::Float;
  if (all_bool) return ColType::Bool;
  return ColType::Text;
}

}  // namespace

Table infer_pandas_types(const Table& text_table) {
  Table out(text_table.name, text_table.columns);
  out.rows.assign(text_table.rows.size(), std::vector<Cell>(text_table.columns.size()));
  for (size_t c = 0; c < text_table.columns.size(); ++c) {
    ColType type = infer_column(text_table, c);
    for (size_t r = 0; r < text_table.rows.size(); ++r) {
      const Cell& in = text_table.rows[r][c];
      std::string s = in.is_text() ? in.text() : in.to_csv_text(false);
      Cell& cell = out.rows[r][c];
      if (in.missing() || is_na_text(s)) {
        cell = type == ColType::Float ? Cell(std::numeric_limits<double>::quiet_NaN()) : Cell();
        continue;
      }
      switch (type) {
        case ColType::Int: {
          int64_t i = 0;
          parse_int_text(s, i);
          cell = Cell(i);
          break;
        }
        case ColType::Float: {
          double d = 0;
          int64_t i = 0;
          if (parse_int_text(s, i))
            d = static_cast<double>(i);
          else
            parse_float_text(s, d);
          cell = Cell(d);
          break;
        }
        case ColType::Bool:
          cell = Cell(is_true_text(s));
          break;
        case ColType::Text:
          cell = Cell(s);
          break;
      }
    }
  }
  return out;
}

Table read_csv_typed(const std::string& path) {
  return infer_pandas_types(read_csv_file(path));
}

bool is_na(const Cell& c) {
  return c.missing() || (c.is_double() && std::isnan(c.number()));
}

const Cell* cell_at(const Table& table, size_t row, std::string_view column) {
  int c = table.col(column);
  if (c < 0 || row >= table.rows.size()) return nullptr;
  return &table.rows[row][static_cast<size_t>(c)];
}

double cell_number(const Cell* c) {
  if (!c) return std::numeric_limits<double>::quiet_NaN();
  if (c->is_bool()) return c->is_bool() && std::get<bool>(c->v) ? 1.0 : 0.0;
  return c->number();
}

std::string cell_text(const Cell* c) {
  return c && c->is_text() ? c->text() : std::string();
}

ojson cell_to_json(const Cell& c) {
  if (c.missing()) return nullptr;
  if (c.is_int()) return std::get<int64_t>(c.v);
  if (c.is_double()) return std::get<double>(c.v);
  if (c.is_bool()) return std::get<bool>(c.v);
  return c.text();
}

// ---------------------------------------------------------------------------
// Sums and rounding
// ---------------------------------------------------------------------------

namespace {

// numpy's pairwise_sum (umath loops): 8-way unrolled blocks up to 128 values.
double pairwise(const double* a, size_t n) {
  if (n < 8) {
    double res = 0.0;
    for (size_t k = 0; k < n; ++k) res += a[k];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int k = 0; k < 8; ++k) r[k] = a[k];
    size_t k = 8;
    for (; k < n - (n % 8); k += 8)
      for (int j = 0; j < 8; ++j) r[j] += a[k + j];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; k < n; ++k) res += a[k];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise(a, n2) + pairwise(a + n2, n - n2);
}

}  // namespace

double pandas_sum(const std::vector<double>& values) {
  std::vector<double> v;
  v.reserve(values.size());
  for (double x : values) v.push_back(std::isnan(x) ? 0.0 : x);
  if (v.empty()) return 0.0;
  // The reduction seeds the accumulator with the first element.
  return v[0] + pairwise(v.data() + 1, v.size() - 1);
}

std::vector<double> column_numbers(const Table& table, std::string_view column) {
  std::vector<double> out;
  int c = table.col(column);
  if (c < 0) return out;
  for (const auto& row : table.rows) out.push_back(cell_number(&row[static_cast<size_t>(c)]));
  return out;
}

double py_round(double x, int ndigits) {
  if (!std::isfinite(x)) return x;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", ndigits, x);
  double r = std::strtod(buf, nullptr);
  if (r == 0.0) r = std::copysign(0.0, x);
  return r;
}

double np_round(double x, int ndigits) {
  double f = 1.0;
  for (int k = 0; k < ndigits; ++k) f *= 10.0;
  return std::nearbyint(x * f) / f;
}

ojson py_round_json(const ojson& v, int ndigits) {
  if (v.is_number_integer()) return v;
  if (v.is_number_float()) return py_round(v.get<double>(), ndigits);
  return v;
}

// ---------------------------------------------------------------------------
// JSON output the way Python's json module writes it
// ---------------------------------------------------------------------------

namespace {

void dump_string(std::string& out, const std::string& s) {
  static const char* hex = "0123456789abcdef";
  auto u_escape = [&](uint32_t cp) {
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += hex[(cp >> shift) & 0xF];
  };
  out += '"';
  for (size_t k = 0; k < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[k]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        default:
          if (c < 0x20)
            u_escape(c);
          else
            out += static_cast<char>(c);
      }
      ++k;
      continue;
    }
    // Decode one UTF-8 sequence (invalid bytes pass through as U+FFFD).
    uint32_t cp = 0xFFFD;
    size_t len = 1;
    if ((c & 0xE0) == 0xC0 && k + 1 < s.size()) {
      cp = ((c & 0x1F) << 6) | (s[k + 1] & 0x3F);
      len = 2;
    } else if ((c & 0xF0) == 0xE0 && k + 2 < s.size()) {
      cp = ((c & 0x0F) << 12) | ((s[k + 1] & 0x3F) << 6) | (s[k + 2] & 0x3F);
      len = 3;
    } else if ((c & 0xF8) == 0xF0 && k + 3 < s.size()) {
      cp = ((c & 0x07) << 18) | ((s[k + 1] & 0x3F) << 12) | ((s[k + 2] & 0x3F) << 6) |
           (s[k + 3] & 0x3F);
      len = 4;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      u_escape(0xD800 + (cp >> 10));
      u_escape(0xDC00 + (cp & 0x3FF));
    } else {
      u_escape(cp);
    }
    k += len;
  }
  out += '"';
}

void dump_value(std::string& out, const ojson& v, int indent, int level) {
  auto newline = [&](int lvl) {
    out += '\n';
    out.append(static_cast<size_t>(indent * lvl), ' ');
  };
  switch (v.type()) {
    case ojson::value_t::null:
      out += "null";
      break;
    case ojson::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      break;
    case ojson::value_t::number_integer:
      out += std::to_string(v.get<int64_t>());
      break;
    case ojson::value_t::number_unsigned:
      out += std::to_string(v.get<uint64_t>());
      break;
    case ojson::value_t::number_float: {
      double d = v.get<double>();
      if (std::isnan(d))
        out += "NaN";
      else if (std::isinf(d))
        out += d > 0 ? "Infinity" : "-Infinity";
      else
        out += py_float_repr(d);
      break;
    }
    case ojson::value_t::string:
      dump_string(out, v.get_ref<const std::string&>());
      break;
    case ojson::value_t::array: {
      if (v.empty()) {
        out += "[]";
        break;
      }
      out += '[';
      bool first = true;
      for (const auto& item : v) {
        if (!first) out += ',';
        first = false;
        newline(level + 1);
        dump_value(out, item, indent, level + 1);
      }
      newline(level);
      out += ']';
      break;
    }
    case ojson::value_t::object: {
      if (v.empty()) {
        out += "{}";
        break;
      }
      out += '{';
      bool first = true;
      for (const auto& [key, item] : v.items()) {
        if (!first) out += ',';
        first = false;
        newline(level + 1);
        dump_string(out, key);
        out += ": ";
        dump_value(out, item, indent, level + 1);
      }
      newline(level);
      out += '}';
      break;
    }
    default:
      out += "null";
      break;
  }
}

// Replaces bare NaN / Infinity tokens (outside strings) by null.
std::string neutralize_non_json_numbers(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_str = false;
  for (size_t k = 0; k < text.size(); ++k) {
    char c = text[k];
    if (in_str) {
      out += c;
      if (c == '\\' && k + 1 < text.size())
        out += text[++k];
      else if (c == '"')
        in_str = false;
      continue;
    }
    if (c == '"') {
      in_str = true;
      out += c;
    } else if (text.compare(k, 3, "NaN") == 0) {
      out += "null";
      k += 2;
    } else if (text.compare(k, 9, "-Infinity") == 0) {
      out += "null";
      k += 8;
    } else if (text.compare(k, 8, "Infinity") == 0) {
      out += "null";
      k += 7;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string py_json_dump(const ojson& value, int indent) {
  std::string out;
  dump_value(out, value, indent, 0);
  return out;
}

void write_json_atomic(const std::string& path, const ojson& value) {
  write_file_atomic(path, py_json_dump(value));
}

ojson read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  try {
    return ojson::parse(text);
  } catch (const nlohmann::json::parse_error&) {
  }
  try {
    return ojson::parse(neutralize_non_json_numbers(text));
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(path + ": invalid JSON: " + e.what());
  }
}

// ---------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------

std::pair<std::string, std::string> normalize_category(const Cell* op_category) {
  if (!op_category || is_na(*op_category)) return {"other", "Other"};
  std::string display =
      op_category->is_text() ? op_category->text() : op_category->to_csv_text(false);
  if (display.empty()) return {"other", "Other"};
  std::string key;
  for (char c : display) {
    if (c == ' ' || c == '/')
      key += '_';
    else
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return {key, display};
}

// TraceLens's torch_dtype_map, shared with the perf models.
std::string torch_dtype_precision(std::string_view dtype) {
  return perf::precision_of(dtype);
}

bool is_valid_category_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

}  // namespace jarvis::analysis
