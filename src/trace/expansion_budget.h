// What one input may expand to in memory. A reader charges every expansion
// as it makes it (a string the file references many times and the reader
// copies, an iota device list turned into ids, an operand list rendered per
// kernel, a module path per allocation), so a kilobyte file that references
// one megabyte string 300,000 times stops with a TraceError at the budget
// instead of taking gigabytes first: the check comes before the allocation.
//
// The limit scales with the input (real XPlane files decode to well under
// 16x their size; kExpansionFactor leaves room) above a floor that any
// honest small input stays far below, and never exceeds half the process's
// memory budget (`serve --max-memory`: set_process_memory_limit), so one
// trace cannot take the whole of it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "trace/trace.h"

namespace jarvis {

inline constexpr uint64_t kExpansionFloorBytes = uint64_t{256} << 20;
inline constexpr uint64_t kExpansionFactor = 64;

// The process's memory budget (0: none), as `serve --max-memory` gives it.
void set_process_memory_limit(uint64_t bytes);
uint64_t process_memory_limit();

// The most an input of `input_bytes` may expand to here.
uint64_t expansion_limit(uint64_t input_bytes);

// What charge() throws: a TraceError (InvalidInput), of its own type so that
// a reader wrapping its inner errors ("/host:metadata holds ...") passes it on
// as it is.
class ExpansionRefused : public TraceError {
 public:
  using TraceError::TraceError;
};

class ExpansionBudget {
 public:
  // `label` names the input in the error (its path).
  ExpansionBudget(std::string label, uint64_t input_bytes);
  // A given limit (tests, and callers with a budget of their own).
  ExpansionBudget(std::string label, uint64_t input_bytes, uint64_t limit)
      : label_(std::move(label)), input_bytes_(input_bytes), limit_(limit), why_("given") {}

  // Adds `bytes` made for `what` ("the stat names events reference"); throws
  // TraceError naming both once the total would pass the limit.
  void charge(uint64_t bytes, std::string_view what) {
    if (bytes > limit_ - used_) refuse(bytes, what);
    used_ += bytes;
  }
  // The heap bytes a std::string of `n` characters takes (0 inside the
  // small-string buffer).
  static uint64_t string_bytes(size_t n) { return n > 15 ? n + 1 : 0; }

  uint64_t used() const { return used_; }
  uint64_t limit() const { return limit_; }

 private:
  [[noreturn]] void refuse(uint64_t bytes, std::string_view what) const;

  std::string label_;
  uint64_t input_bytes_ = 0;
  uint64_t limit_ = 0;
  uint64_t used_ = 0;
  std::string why_;  // how the limit was set, for the error
};

}  // namespace jarvis
