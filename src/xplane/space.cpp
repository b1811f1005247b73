#include "xplane/space.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "xplane/wire.h"

namespace jarvis::xplane {

namespace {

namespace fs = std::filesystem;

// Enough to hold the first plane's leading fields (its id and name, or the
// start of its metadata maps).
constexpr size_t kSniffBytes = 64 * 1024;

std::string read_file(const std::string& path, size_t limit, uint64_t& size) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw TraceError(fmt::format("{}: a directory, not an XSpace file", path));
  size = fs::file_size(path, ec);
  if (ec)
    throw TraceError(fmt::format("{}: cannot read ({})", path, ec.message()), ErrorKind::NotFound);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(fmt::format("{}: cannot open", path), ErrorKind::NotFound);
  std::string data(static_cast<size_t>(std::min<uint64_t>(size, limit)), '\0');
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  data.resize(static_cast<size_t>(in.gcount()));
  return data;
}

}  // namespace

bool Stat::as_int(int64_t& out) const {
  if (kind == Kind::Int) {
    out = integer;
    return true;
  }
  if (kind == Kind::Uint) {
    out = static_cast<int64_t>(uint);
    return true;
  }
  return false;
}

const EventMetadata* Plane::metadata(int64_t id) const {
  auto it = std::lower_bound(event_metadata.begin(), event_metadata.end(), id,
                             [](const EventMetadata& m, int64_t v) { return m.id < v; });
  return it != event_metadata.end() && it->id == id ? &*it : nullptr;
}

const Stat* Plane::stat(std::string_view stat_name) const {
  for (const Stat& s : stats)
    if (s.name == stat_name) return &s;
  return nullptr;
}

int64_t Plane::gpu_ordinal() const {
  for (std::string_view prefix : {"/device:GPU:", "/device:ROCM:"}) {
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    int64_t n = 0;
    for (size_t k = prefix.size(); k < name.size(); ++k) {
      if (name[k] < '0' || name[k] > '9' || n > 1'000'000) return -1;
      n = n * 10 + (name[k] - '0');
    }
    return n;
  }
  return -1;
}

bool is_xplane_bytes(std::string_view bytes) {
  return wire::looks_like_space(bytes.substr(0, kSniffBytes), bytes.size());
}

bool is_xplane_input(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  uint64_t size = 0;
  try {
    std::string prefix = read_file(path, kSniffBytes, size);
    return wire::looks_like_space(prefix, size);
  } catch (const TraceError&) {
    return false;  // unreadable: the Kineto loader names the problem
  }
}

Space load_space_bytes(std::string_view bytes, const std::string& label) {
  Space space;
  space.path = label;
  space.file_bytes = bytes.size();
  if (!wire::looks_like_space(bytes.substr(0, kSniffBytes), bytes.size()))
    throw TraceError(fmt::format(
        "{}: not an XSpace protobuf (.xplane.pb): it does not start with an XPlane message; "
        "give the file jax.profiler / XProf wrote under plugins/profile/<run>/",
        label));
  try {
    wire::decode_space(bytes, space);
  } catch (const wire::DecodeError& e) {
    throw TraceError(
        fmt::format("{}: a damaged XSpace protobuf ({}); the file may be truncated — "
                    "copy it again from the profile directory",
                    label, e.what()));
  }
  return space;
}

Space load_space(const std::string& path) {
  uint64_t size = 0;
  std::string bytes = read_file(path, std::numeric_limits<size_t>::max(), size);
  if (bytes.size() != size) throw TraceError(fmt::format("{}: short read", path));
  return load_space_bytes(bytes, path);
}

}  // namespace jarvis::xplane
