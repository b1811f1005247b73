// Pieces shared by the critical-path sources.
#pragma once

#include <string>
#include <string_view>

#include "critical_path/critical_path.h"

namespace jarvis::critical_path::detail {

// Topological order of the nodes (Graph::order, in_off, in_edges).
void order_nodes(Graph& g);

const char* node_kind_name(NodeKind kind);
const char* edge_kind_name(EdgeKind kind);

// Host-side time: runtime calls, the gaps between them, launch latency, and
// the return from a synchronisation after the GPU finished.
bool is_host_category(std::string_view category);

}  // namespace jarvis::critical_path::detail
