// The one error model: every failure jarvis reports on purpose is a
// jarvis::Error (or derives from it) carrying one of five kinds, and the kind
// alone decides how the failure leaves the process. The mapping is written
// once: cli_exit_code() for the `jarvis` binary (docs/cli.md) and
// error_kind_name() for the MCP layer, which answers a failed tool call with
// isError:true and names the kind in the result (structuredContent.error.kind).
//
//   kind          meaning                                         CLI exit
//   InvalidInput  the input or an argument is malformed / out of    1 (2 for a
//                 range (a trace that does not parse, a bad value)   UsageError)
//   NotFound      a named file, handle, op or category is absent      1
//   Unsupported   valid input the engine does not handle (an op
//                 without a perf model, a format version)             1
//   Cancelled     the caller cancelled the work                       1
//   Internal      an engine invariant broke                           1
//
// An exception that is no jarvis::Error counts as InvalidInput when it is a
// std::runtime_error or std::invalid_argument (the engine's older input
// errors: a file that cannot be read, a bad category name) and as Internal
// otherwise (std::bad_alloc, std::out_of_range from a broken invariant).
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace jarvis {

enum class ErrorKind { InvalidInput, NotFound, Unsupported, Cancelled, Internal };

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

// A command line that parsed but makes no sense (--svg-dir without --html):
// invalid input the user fixes by changing the command, exit code 2.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(ErrorKind::InvalidInput, message) {}
};

// The base of the engine's own exception types (TraceError, PerfModelError,
// ToolError, ...): an Error whose kind defaults to kDefault, which a throw
// site can override (TraceError(message, ErrorKind::NotFound)).
template <ErrorKind kDefault>
class ErrorOf : public Error {
 public:
  explicit ErrorOf(const std::string& message, ErrorKind kind = kDefault) : Error(kind, message) {}
};

// "invalid_input", "not_found", "unsupported", "cancelled", "internal".
inline const char* error_kind_name(ErrorKind kind) {
  static constexpr const char* kNames[] = {"invalid_input", "not_found", "unsupported", "cancelled",
                                           "internal"};
  return kNames[static_cast<int>(kind)];
}

// The kind of any exception (see the top of this file).
inline ErrorKind error_kind_of(const std::exception& e) {
  if (const auto* err = dynamic_cast<const Error*>(&e)) return err->kind();
  if (dynamic_cast<const std::runtime_error*>(&e) || dynamic_cast<const std::invalid_argument*>(&e))
    return ErrorKind::InvalidInput;
  return ErrorKind::Internal;
}

// Exit codes of the `jarvis` binary (docs/cli.md, kept stable): 0 ok, 1 input
// or analysis error, 2 usage error. A failed run exits 1 whatever its kind;
// a UsageError (and CLI11's own parse errors, handled before a command runs)
// exits 2.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline int cli_exit_code(const std::exception& e) {
  if (dynamic_cast<const UsageError*>(&e)) return kExitUsage;
  return kExitFailure;
}

}  // namespace jarvis
