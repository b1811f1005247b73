// A what_if request as the engine reads it (tools_schema/what_if.json's
// scenario fields): read in one place for the what_if tool and for insights,
// which replays each finding's `what_if` (the same arguments) alone and, in
// its plan, several of them together.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "critical_path/critical_path.h"
#include "critical_path/host_gaps.h"

namespace jarvis::critical_path {

struct WhatIfRequest {
  Scenario scenario;  // the GPU selection, its factor, graph, overlap, model
  HostRemoval removal;
  std::optional<HostGapSelector> host_gaps;
};

// Reads the arguments; absent fields take the schema's defaults. Throws
// CriticalPathError for a uid that no trace can hold, factor given with
// median_rank, or remove_waits_only without the calls it keeps.
WhatIfRequest parse_what_if_request(const nlohmann::json& args);

// Joins a request's GPU change into `joint` (several findings' changes in one
// replay): its selection as a further one at its own factor
// (Scenario::also_scale), and a CUDA graph if it asks for one. The host
// removal and host gaps need the graph: the caller adds them.
void join_gpu_change(const WhatIfRequest& request, Scenario& joint);

}  // namespace jarvis::critical_path
