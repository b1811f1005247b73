// The memory budget a server process is given (`serve --max-memory`), handed
// to the parts that allocate on an input's behalf: one input may expand to
// at most half of it (trace/expansion_budget.h), and SQLite's heap, shared
// by every query and the Nsight reader, to at most a quarter (never more
// than its 1 GiB default).
#pragma once

#include <cstdint>

namespace jarvis {

void set_process_memory_budget(uint64_t bytes);

}  // namespace jarvis
