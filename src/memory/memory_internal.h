// Shared by the memory/ sources, not part of the capability's API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memory/memory.h"

namespace jarvis::memory {

// The rules over a finished analysis (memory_findings.cpp).
std::vector<MemoryFinding> memory_findings(const MemoryAnalysis& analysis);

// "1.50 GiB", "12.0 MiB", "512 B" (binary units, as the allocator counts).
std::string format_bytes(int64_t bytes);

// "op" or "op in module" for a group.
std::string group_label(const std::string& op, const std::string& module);

}  // namespace jarvis::memory
