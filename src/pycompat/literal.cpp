#include "pycompat/literal.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "pycompat/repr.h"
#include "pycompat/text.h"

namespace jarvis::pycompat {

namespace {

class LiteralParser {
 public:
  explicit LiteralParser(std::string_view text) : t_(text) {}

  PyValue parse_all() {
    PyValue v = value();
    skip_ws();
    if (p_ != t_.size()) fail("trailing characters", LiteralError::Reason::TrailingText);
    return v;
  }

 private:
  std::string_view t_;
  size_t p_ = 0;
  int depth_ = 0;

  [[noreturn]] void fail(const char* what,
                         LiteralError::Reason reason = LiteralError::Reason::Syntax) const {
    throw LiteralError(
        reason,
        std::string("not a Python literal (") + what + " at offset " + std::to_string(p_) + ")",
        p_);
  }
  // Containers and np.*(...) wrappers each take one level (and stack frames).
  void enter() {
    if (++depth_ > kMaxLiteralDepth)
      throw LiteralError(
          LiteralError::Reason::TooDeep,
          "literal nested deeper than " + std::to_string(kMaxLiteralDepth) + " levels", p_);
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

  PyValue value() {
    skip_ws();
    if (p_ >= t_.size()) fail("unexpected end");
    PyValue v;
    char c = t_[p_];
    if (c == '(' || c == '[') {
      enter();
      v = sequence(c == '(' ? ')' : ']', c == '(');
      --depth_;
    } else if (c == '{') {
      enter();
      v = dict();
      --depth_;
    } else if (c == '\'' || c == '"') {
      v.kind = PyValue::Kind::String;
      v.s = string_lit();
      // Adjacent string literals concatenate.
      for (skip_ws(); p_ < t_.size() && (t_[p_] == '\'' || t_[p_] == '"'); skip_ws())
        v.s += string_lit();
    } else if (keyword("None")) {
      v.kind = PyValue::Kind::None;
    } else if (keyword("True")) {
      v.kind = PyValue::Kind::Bool;
      v.b = true;
    } else if (keyword("False")) {
      v.kind = PyValue::Kind::Bool;
      v.b = false;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      enter();
      v = numpy_wrapper();
      --depth_;
    } else {
      v = number();
    }
    return v;
  }

  // np.float64(1.5), np.int64(3), numpy.float32(2.0): the wrapped number.
  PyValue numpy_wrapper() {
    size_t start = p_;
    while (p_ < t_.size() && (ident_char(p_) || t_[p_] == '.')) ++p_;
    std::string_view name = t_.substr(start, p_ - start);
    if (!(name.starts_with("np.") || name.starts_with("numpy."))) fail("unknown name");
    skip_ws();
    if (p_ >= t_.size() || t_[p_] != '(') fail("expected (");
    ++p_;
    PyValue inner = value();
    skip_ws();
    if (p_ >= t_.size() || t_[p_] != ')') fail("expected )");
    ++p_;
    if (name.find("float") != std::string_view::npos && inner.kind == PyValue::Kind::Int) {
      inner.kind = PyValue::Kind::Float;
      inner.f = static_cast<double>(inner.i);
    }
    return inner;
  }

  PyValue sequence(char close, bool paren) {
    ++p_;
    PyValue v;
    v.kind = paren ? PyValue::Kind::Tuple : PyValue::Kind::List;
    bool saw_comma = false;
    skip_ws();
    while (true) {
      skip_ws();
      if (p_ >= t_.size()) fail("unterminated sequence");
      if (t_[p_] == close) {
        ++p_;
        break;
      }
      v.list.push_back(value());
      skip_ws();
      if (p_ < t_.size() && t_[p_] == ',') {
        ++p_;
        saw_comma = true;
      } else if (p_ >= t_.size() || t_[p_] != close) {
        fail("expected , or closing bracket");
      }
    }
    // "(x)" is just x.
    if (paren && v.list.size() == 1 && !saw_comma) return v.list[0];
    return v;
  }

  PyValue dict() {
    ++p_;
    PyValue v;
    v.kind = PyValue::Kind::Dict;
    while (true) {
      skip_ws();
      if (p_ >= t_.size()) fail("unterminated dict");
      if (t_[p_] == '}') {
        ++p_;
        break;
      }
      PyValue key = value();
      skip_ws();
      if (p_ >= t_.size() || t_[p_] != ':') fail("expected :");
      ++p_;
      PyValue val = value();
      v.add_entry(std::move(key), std::move(val));
      skip_ws();
      if (p_ < t_.size() && t_[p_] == ',')
        ++p_;
      else if (p_ >= t_.size() || t_[p_] != '}')
        fail("expected , or }");
    }
    return v;
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

  PyValue number() {
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
    PyValue v;
    char* end = nullptr;
    if (!is_float) {
      errno = 0;
      long long x = std::strtoll(text.c_str(), &end, 10);
      if (errno == 0 && end && *end == '\0') {
        v.kind = PyValue::Kind::Int;
        v.i = x;
        return v;
      }
    }
    v.kind = PyValue::Kind::Float;
    v.f = std::strtod(text.c_str(), &end);
    if (!end || *end != '\0') fail("bad number");
    return v;
  }
};

}  // namespace

PyValue parse_py_literal(std::string_view text) {
  return LiteralParser(text).parse_all();
}

std::optional<PyValue> try_parse_py_literal(std::string_view text) {
  try {
    return parse_py_literal(text);
  } catch (const LiteralError&) {
    return std::nullopt;
  }
}

}  // namespace jarvis::pycompat
