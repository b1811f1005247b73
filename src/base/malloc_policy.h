// How a jarvis process takes memory from the system and hands it back.
#pragma once

#include <optional>
#include <string>

namespace jarvis {

// Called first thing in main(), before any thread or allocation of note:
// every allocation of the process comes from one arena (glibc's main heap,
// grown with brk), and the process is run again (exec of /proc/self/exe,
// the same pid, arguments and descriptors) with glibc's tunable
// glibc.malloc.hugetlb=1, which asks for transparent huge pages on every
// region malloc takes from the system (where THP is "madvise", the common
// default). Fresh memory costs a page fault per 4 KiB page on first touch,
// and on the virtual machines measured a fault costs 2-16 us: an x32
// trace's analyses spent a quarter to a third of their time in faults
// (bench/RESULTS.md; docs/performance.md, "Malloc on huge pages"). The variable is
// restored before the program runs, so processes it starts do not inherit
// it. Nothing is done where the user's GLIBC_TUNABLES names the tunable
// already, where JARVIS_MALLOC_TUNING=0, or where malloc is not glibc's
// (sanitizers); a failed exec leaves the process running as it was.
void tune_malloc_at_start(char** argv);

// The parts of tune_malloc_at_start that read and write no environment.
namespace malloc_tuning {
// GLIBC_TUNABLES for the run again, given the user's (null: unset): theirs
// with glibc.malloc.hugetlb=1 added; nullopt where theirs names it already.
std::optional<std::string> tunables_with_huge_pages(const char* user);
// The user's GLIBC_TUNABLES (null: unset) as the run again carries it in
// JARVIS_MALLOC_TUNED, and back (nullopt: it was unset).
std::string marker_of(const char* user);
std::optional<std::string> user_tunables_of(const std::string& marker);
}  // namespace malloc_tuning

// For a process that exits when its one task is done (a CLI command, not the
// server): memory it frees stays in malloc's arenas for its next allocations
// instead of going back to the system, and blocks up to 32 MiB come from
// the arenas instead of a mapping of their own. Each phase (the load's parse
// parts, the call tree, the sheets) then reuses the pages the one before it
// freed: fresh pages cost a fault each on first touch (1.9-16 us on the
// virtual machines measured, bench/RESULTS.md), reused ones nothing. The
// server bounds what it keeps (below). No effect where malloc is not glibc's.
void keep_freed_memory_for_reuse();

// For the server, which lives on between calls: blocks up to 32 MiB come
// from the arena, as for a CLI command, and up to 64 MiB of free memory at
// the arena's top is kept for the next allocations; more goes back to the
// system (load_trace and an evicted trace also trim explicitly). glibc's
// default reaches these values once a 32 MiB block of a mapping of its own
// has been freed: it starts each block over 128 KiB on a mapping of its own
// and raises that threshold only as such blocks are freed, so a fresh
// server's first load_trace mapped, faulted in and unmapped most of its
// buffers (an unmap in a process with threads also flushes the TLB of every
// core it ran on): x256 `load_trace` 0.72-0.94 s with the default, 0.58-0.80
// s with this (bench/RESULTS.md, forty-sixth session). Its workers inherit
// it. No effect where malloc is not glibc's.
void reuse_freed_memory_in_a_server();

}  // namespace jarvis
