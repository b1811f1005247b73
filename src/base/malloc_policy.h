// How a one-shot command's process hands memory back to the system.
#pragma once

namespace jarvis {

// For a process that exits when its one task is done (a CLI command, not the
// server): memory it frees stays in malloc's arenas for its next allocations
// instead of going back to the system, and blocks up to 32 MiB come from
// the arenas instead of a mapping of their own. Each phase (the load's parse
// parts, the call tree, the sheets) then reuses the pages the one before it
// freed: fresh pages cost a fault each on first touch (1.9-16 us on the
// virtual machines measured, bench/RESULTS.md), reused ones nothing. The
// server keeps glibc's defaults, which give memory back after a trace is
// dropped. No effect where malloc is not glibc's.
void keep_freed_memory_for_reuse();

}  // namespace jarvis
