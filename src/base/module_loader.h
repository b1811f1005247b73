// Optional parts of the jarvis binary that live in modules loaded on demand
// (the HTTP transport, the MPI scale-out): their libraries (cpp-httplib with
// OpenSSL and brotli; Open MPI with hwloc and libevent) are then loaded only
// by the commands that use them, not at every start.
#pragma once

namespace jarvis {

// The address of extern "C" symbol `entry` in module `file`
// (libjarvis_http.so, ...), looked for beside the running binary (the build
// tree), then in ../lib/jarvis/ (an installed tree). Loaded once and never
// unloaded: later calls return the entry found first, so callers keep no
// state of their own. Throws std::runtime_error naming every path tried and
// why it failed (and the next call tries again). The module resolves
// jarvis's own symbols against the binary, which exports them
// (ENABLE_EXPORTS).
void* load_module_entry(const char* file, const char* entry);

}  // namespace jarvis
