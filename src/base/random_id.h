// Unguessable identifiers (MCP session ids, stateless trace handles) from
// the kernel CSPRNG (getrandom): a handle or session id is a capability, so it must not be
// predictable from earlier ones (mt19937 state is recoverable from outputs).
#pragma once

#include <cstddef>
#include <string>

namespace jarvis {

// `bytes` random bytes as lowercase hex (2 * bytes characters). Throws
// std::runtime_error when the CSPRNG cannot deliver (never silently weaker).
std::string random_hex(size_t bytes);

}  // namespace jarvis
