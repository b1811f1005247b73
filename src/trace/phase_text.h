// The Chrome trace-event spelling of an event's phase, for writers that
// emit or expose events in Kineto's terms (the SQL tables, annotated traces).
#pragma once

#include <string_view>

#include "trace/trace.h"

namespace jarvis {

// The Chrome trace-event letter of a phase ("X", "i", "s", "f", "M"), "other"
// for phases jarvis does not model, "" for none.
inline std::string_view phase_text(Phase p) {
  switch (p) {
    case Phase::Complete:
      return "X";
    case Phase::Instant:
      return "i";
    case Phase::FlowStart:
      return "s";
    case Phase::FlowEnd:
      return "f";
    case Phase::Metadata:
      return "M";
    case Phase::Other:
      return "other";
    case Phase::None:
      return "";
  }
  return "";
}

}  // namespace jarvis
