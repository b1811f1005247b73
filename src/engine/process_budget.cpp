#include "engine/process_budget.h"

#include <algorithm>

#include "sql/sqlite_binding.h"
#include "trace/expansion_budget.h"

namespace jarvis {

void set_process_memory_budget(uint64_t bytes) {
  set_process_memory_limit(bytes);
  const auto quarter = static_cast<int64_t>(std::min<uint64_t>(bytes / 4, INT64_MAX));
  sql::set_heap_limit_bytes(bytes == 0 ? sql::kDefaultHeapLimitBytes
                                       : std::min(sql::kDefaultHeapLimitBytes, quarter));
}

}  // namespace jarvis
