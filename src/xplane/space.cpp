#include "xplane/space.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "trace/expansion_budget.h"
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

// "jit_forward_3d_conv(15)" -> 15; -1 when the label ends in no "(N)".
int64_t program_id_of(std::string_view label) {
  if (label.size() < 3 || label.back() != ')') return -1;
  size_t open = label.rfind('(');
  if (open == std::string_view::npos || open + 2 > label.size() - 1) return -1;
  int64_t n = 0;
  for (size_t k = open + 1; k + 1 < label.size(); ++k) {
    char c = label[k];
    if (c < '0' || c > '9' || n > (int64_t{1} << 40)) return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

std::string_view module_name_of(std::string_view label) {
  if (program_id_of(label) < 0) return label;
  return label.substr(0, label.rfind('('));
}

// The HLO protos of /host:metadata: one event metadata per program, its
// bytes stat ("Hlo Proto") the serialized xla.HloProto.
void decode_hlo_modules(Space& space, ExpansionBudget& budget) {
  for (Plane& plane : space.planes) {
    if (plane.name != "/host:metadata") continue;
    for (EventMetadata& meta : plane.event_metadata) {
      for (Stat& stat : meta.stats) {
        if (stat.kind != Stat::Kind::Bytes || stat.name.find("Hlo Proto") == std::string::npos)
          continue;
        std::string label = meta.name.empty() ? fmt::format("program {}", meta.id) : meta.name;
        try {
          HloModule m = decode_hlo_module(stat.bytes, label, budget);
          m.program_id = program_id_of(label);
          if (m.program_id < 0) m.program_id = meta.id;
          if (m.name.empty()) m.name = std::string(module_name_of(label));
          space.hlo_modules.push_back(std::move(m));
        } catch (const ExpansionRefused&) {
          throw;  // names the file and what expanded already
        } catch (const TraceError& e) {
          throw TraceError(fmt::format("{}: /host:metadata holds {}; the file is damaged",
                                       space.path, e.what()));
        }
        stat.bytes.clear();
        stat.bytes.shrink_to_fit();
      }
    }
  }
}

}  // namespace

const HloModule* Space::find_hlo_module(std::string_view name, int64_t program_id) const {
  const HloModule* by_name = nullptr;
  size_t named = 0;
  for (const HloModule& m : hlo_modules) {
    if (m.name != name) continue;
    if (program_id >= 0 && m.program_id == program_id) return &m;
    by_name = &m;
    ++named;
  }
  return named == 1 ? by_name : nullptr;
}

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
  ExpansionBudget budget(label, bytes.size());
  try {
    wire::decode_space(bytes, space, budget);
  } catch (const wire::DecodeError& e) {
    throw TraceError(
        fmt::format("{}: a damaged XSpace protobuf ({}); the file may be truncated — "
                    "copy it again from the profile directory",
                    label, e.what()));
  }
  decode_hlo_modules(space, budget);
  space.expanded_bytes = budget.used();
  return space;
}

Space load_space(const std::string& path) {
  uint64_t size = 0;
  std::string bytes = read_file(path, std::numeric_limits<size_t>::max(), size);
  if (bytes.size() != size) throw TraceError(fmt::format("{}: short read", path));
  return load_space_bytes(bytes, path);
}

}  // namespace jarvis::xplane
