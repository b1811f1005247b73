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
// An exception that is no jarvis::Error (std::bad_alloc, a library's own
// exception) counts as Internal.
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

// "invalid_input", "not_found", "unsupported", "cancelled", "internal".
inline const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidInput:
      return "invalid_input";
    case ErrorKind::NotFound:
      return "not_found";
    case ErrorKind::Unsupported:
      return "unsupported";
    case ErrorKind::Cancelled:
      return "cancelled";
    case ErrorKind::Internal:
      return "internal";
  }
  return "internal";
}

// The kind of any exception: a jarvis::Error's own; Internal otherwise.
inline ErrorKind error_kind_of(const std::exception& e) {
  if (const auto* err = dynamic_cast<const Error*>(&e)) return err->kind();
  return ErrorKind::Internal;
}

// Exit codes of the `jarvis` binary (docs/cli.md): 0 ok, 1 input or analysis
// error, 2 usage error. Every kind of a failed run is exit 1; usage errors
// (CLI11 parse errors and cli::UsageError) are decided by the CLI before any
// kind applies.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline int cli_exit_code(ErrorKind) {
  return kExitFailure;
}

}  // namespace jarvis
