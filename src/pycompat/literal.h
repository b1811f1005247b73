// Python literals: the one ast.literal_eval parser of jarvis and the value it
// returns. TraceLens stores Python objects in CSV cells (shapes, call stacks,
// perf params: tuples, lists, dicts, strings, numbers, None/True/False, and
// np.float64(x) wrappers) and reads them back with ast.literal_eval; trace
// Concrete Inputs ("[True, False]", "1e-05") are parsed the same way (the
// perf models convert the result into a PyValue).
//
// The parser is depth-limited: a container nested deeper than
// kMaxLiteralDepth levels is a LiteralError (a crafted cell costs no stack),
// as the trace loader caps recorded arg nesting at the same depth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace jarvis::pycompat {

using ojson = nlohmann::ordered_json;

inline constexpr int kMaxLiteralDepth = 100;

struct PyLitEntry;

// A Python literal value as ast.literal_eval returns it.
struct PyLit {
  enum class Kind { None, Bool, Int, Float, Str, List, Tuple, Dict };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<PyLit> items;  // List / Tuple
  // Dict, in source order. The element type is declared below: a
  // std::pair<PyLit, PyLit> here would instantiate pair with an incomplete
  // PyLit, which clang rejects.
  std::vector<PyLitEntry> entries;

  bool is_seq() const { return kind == Kind::List || kind == Kind::Tuple; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
  double number() const { return kind == Kind::Int ? static_cast<double>(i) : f; }
  // Python truthiness.
  bool truthy() const;
  // Value of a dict entry whose key is the string `key`, or nullptr.
  const PyLit* get(std::string_view key) const;
  std::string repr() const;  // Python repr()
  std::string str() const;   // Python str(): strings unquoted, else repr
  ojson to_json() const;     // tuples as arrays, dict keys via str()
};

// One dict entry (key, value), with pair-like member names.
struct PyLitEntry {
  PyLit first;
  PyLit second;
  PyLitEntry(PyLit key, PyLit value) : first(std::move(key)), second(std::move(value)) {}
};

// Why a text is not a literal: bad syntax, a complete literal followed by more
// text, or containers nested deeper than kMaxLiteralDepth.
class LiteralError : public Error {
 public:
  enum class Reason { Syntax, TrailingText, TooDeep };
  LiteralError(Reason reason, const std::string& message, size_t offset)
      : Error(ErrorKind::InvalidInput, message), reason_(reason), offset_(offset) {}
  Reason reason() const noexcept { return reason_; }
  size_t offset() const noexcept { return offset_; }

 private:
  Reason reason_;
  size_t offset_;
};

// ast.literal_eval(text); throws LiteralError when the text is not a literal.
PyLit parse_py_literal(std::string_view text);
// Same, but std::nullopt instead of throwing.
std::optional<PyLit> try_parse_py_literal(std::string_view text);

}  // namespace jarvis::pycompat
