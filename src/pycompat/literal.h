// Python literals: the one ast.literal_eval parser of jarvis and the value it
// returns. TraceLens stores Python objects in CSV cells (shapes, call stacks,
// perf params: tuples, lists, dicts, strings, numbers, None/True/False, and
// np.float64(x) wrappers) and reads them back with ast.literal_eval; trace
// Concrete Inputs ("[True, False]", "1e-05") are parsed the same way. The
// result is a PyValue (pycompat/value.h), the type of recorded args too.
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
#include "pycompat/value.h"

namespace jarvis::pycompat {

using ojson = nlohmann::ordered_json;

inline constexpr int kMaxLiteralDepth = 100;

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
PyValue parse_py_literal(std::string_view text);
// Same, but std::nullopt instead of throwing.
std::optional<PyValue> try_parse_py_literal(std::string_view text);

}  // namespace jarvis::pycompat
