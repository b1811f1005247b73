// File reading shared by the rocprofv3 readers: whole files, gzip or plain.
#pragma once

#include <cstdint>
#include <string>

namespace jarvis::rocprof::io {

// The file's bytes, gunzipped when it starts with the gzip magic (every
// member of a multi-member file). Throws TraceError naming the file.
std::string read_text(const std::string& path, uint64_t* file_bytes = nullptr);

// Up to `limit` leading bytes of the (gunzipped) content; "" on any error,
// since detection must never fail where the real reader would explain.
std::string peek_text(const std::string& path, size_t limit);

}  // namespace jarvis::rocprof::io
