// Shared by the memory/ sources, not part of the capability's API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memory/memory.h"

namespace jarvis::memory {

// The rules over a finished analysis (memory_findings.cpp).
std::vector<MemoryFinding> memory_findings(const MemoryAnalysis& analysis);

// "op" or "op in module" for a group.
std::string group_label(const std::string& op, const std::string& module);

// A text field of the JSON replies: null when empty.
inline nlohmann::json text_or_null(const std::string& s) {
  return s.empty() ? nlohmann::json() : nlohmann::json(s);
}

}  // namespace jarvis::memory
