// The step model's dependency graph kept beside the trace's snapshot
// (trace/cache_file.h; issue 75): a later process on the same trace reads the
// graph instead of building it again (x256 tile: a 0.6-0.9 s build, most of
// it the first touch of its ~130 MB, against a read of the file from the page
// cache). The analyses of the graph are not kept: they are run again on it.
//
// The file records what the graph was built from and is used only when all
// of it matches the reading process: the trace's snapshot key (the file's
// path, device, inode, size, mtime and edge checksum), the file of the code
// reading it, the jarvis executable or the Python module (its device, inode,
// size and mtime: any rebuild or reinstall of jarvis makes the files of the
// build before stale), and the profiler-cost model the trace
// gets here (critical_path/calibration.h: a new calibration of the host, a
// forced one). Its indices are checked against the graph and the trace on
// reading (every node, edge, label and thread index in range, the in-edge
// CSR and the topological order whole), so that even a file that passed its
// MAC cannot make an analysis read out of bounds.
#pragma once

#include <optional>

#include "critical_path/critical_path.h"
#include "trace/cache_file.h"

namespace jarvis::critical_path {

// The graph of `trace` from its cache file, or nullopt (the reason logged by
// the plan's log) when there is none that matches.
std::optional<Graph> read_graph_file(const CacheFilePlan& plan, const Trace& trace);

// Writes `g`, the graph build_graph made of `trace` alone, to its cache file
// (a failure is logged, never thrown).
void write_graph_file(const CacheFilePlan& plan, const Trace& trace, const Graph& g);

// The extension of the graph's cache file.
inline constexpr const char* kGraphFileExtension = ".jgraph";

}  // namespace jarvis::critical_path
