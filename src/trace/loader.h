// Loading a Kineto trace (.json or .json.gz, single or multi-member gzip)
// into a Trace, streaming: the file is decompressed in chunks (on a thread
// of its own), the reading thread finds each event object's extent, and the
// objects are parsed on that thread or, for large traces, in batches on
// worker threads whose parts are joined in order (LoadOptions::parse_workers).
// Peak memory is the event store plus a few chunks and batches, never the
// whole JSON text.
#pragma once

#include <string>

#include "trace/trace.h"

namespace jarvis {

// Throws TraceError (message names the file and what is wrong).
Trace load_trace(const std::string& path, const LoadOptions& options = {});

// Same, from JSON text already in memory (used by tests and the fuzzer).
Trace load_trace_from_json(std::string_view json, const std::string& label = "<memory>");

}  // namespace jarvis
