// Hand-written decoder of the XSpace protobuf (proto3 wire format). Field
// numbers are those of xla/tsl/profiler/protobuf/xplane.proto. Every varint
// and length is checked against the bytes left, so a truncated or foreign
// input ends in a DecodeError (a TraceError naming the file at the edge),
// never a read past the buffer. The nesting depth is fixed by the schema:
// no recursion on input-controlled depth.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "base/utf8.h"
#include "trace/expansion_budget.h"
#include "xplane/space.h"
#include "xplane/wire.h"

namespace jarvis::xplane::wire {

namespace {

// message XSpace
constexpr uint32_t kSpacePlanes = 1, kSpaceErrors = 2, kSpaceWarnings = 3, kSpaceHostnames = 4;
// message XPlane
constexpr uint32_t kPlaneId = 1, kPlaneName = 2, kPlaneLines = 3, kPlaneEventMetadata = 4,
                   kPlaneStatMetadata = 5, kPlaneStats = 6;
// message XLine
constexpr uint32_t kLineId = 1, kLineName = 2, kLineTimestampNs = 3, kLineEvents = 4,
                   kLineDurationPs = 9, kLineDisplayId = 10, kLineDisplayName = 11;
// message XEvent (offset_ps and num_occurrences are a oneof)
constexpr uint32_t kEventMetadataId = 1, kEventOffsetPs = 2, kEventDurationPs = 3, kEventStats = 4,
                   kEventNumOccurrences = 5;
// message XStat (the value is a oneof)
constexpr uint32_t kStatMetadataId = 1, kStatDouble = 2, kStatUint64 = 3, kStatInt64 = 4,
                   kStatStr = 5, kStatBytes = 6, kStatRef = 7;
// message XEventMetadata
constexpr uint32_t kEventMetaId = 1, kEventMetaName = 2, kEventMetaMetadata = 3,
                   kEventMetaDisplayName = 4, kEventMetaStats = 5;
// message XStatMetadata
constexpr uint32_t kStatMetaId = 1, kStatMetaName = 2;
// map<int64, V> entries
constexpr uint32_t kMapKey = 1, kMapValue = 2;

int64_t as_int64(uint64_t v) {
  return static_cast<int64_t>(v);
}

using StatNames = std::unordered_map<int64_t, std::string>;

// Every decoded object is charged to `budget` before it is built: a stat copies
// its metadata's name (and a ref_value the referenced name), which a crafted
// file may reference far more often than it stores it.
Stat read_stat(std::string_view bytes, const StatNames& names, ExpansionBudget& budget) {
  Reader r(bytes, "XStat");
  Stat s;
  int64_t id = 0;
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case kStatMetadataId:
        expect(f, kVarint, r, "metadata_id");
        id = as_int64(f.varint);
        break;
      case kStatDouble: {
        expect(f, kFixed64, r, "double_value");
        s.kind = Stat::Kind::Double;
        std::memcpy(&s.real, &f.varint, sizeof s.real);
        break;
      }
      case kStatUint64:
        expect(f, kVarint, r, "uint64_value");
        s.kind = Stat::Kind::Uint;
        s.uint = f.varint;
        break;
      case kStatInt64:
        expect(f, kVarint, r, "int64_value");
        s.kind = Stat::Kind::Int;
        s.integer = as_int64(f.varint);
        break;
      case kStatStr:
        expect(f, kLength, r, "str_value");
        s.kind = Stat::Kind::Text;
        budget.charge(ExpansionBudget::string_bytes(f.bytes.size()), "XPlane stat values");
        s.text = valid_utf8(f.bytes);
        break;
      case kStatBytes:
        expect(f, kLength, r, "bytes_value");
        s.kind = Stat::Kind::Bytes;
        s.bytes_len = f.bytes.size();
        budget.charge(f.bytes.size(), "XPlane stat values");
        s.bytes = std::string(f.bytes);
        break;
      case kStatRef: {
        expect(f, kVarint, r, "ref_value");
        s.kind = Stat::Kind::Text;
        auto it = names.find(as_int64(f.varint));
        if (it == names.end()) break;
        budget.charge(ExpansionBudget::string_bytes(it->second.size()),
                      "the stat metadata names XPlane stats reference (ref_value)");
        s.text = it->second;
        break;
      }
      default:
        break;  // unknown fields are skipped, as protobuf does
    }
  }
  auto it = names.find(id);
  if (it == names.end()) {
    s.name = fmt::format("stat#{}", id);
  } else {
    budget.charge(ExpansionBudget::string_bytes(it->second.size()),
                  "the stat metadata names XPlane stats reference");
    s.name = it->second;
  }
  budget.charge(sizeof(Stat), "XPlane stats");
  return s;
}

// A map entry's key and value payload.
std::pair<int64_t, std::string_view> read_entry(std::string_view bytes, const char* what) {
  Reader r(bytes, what);
  std::pair<int64_t, std::string_view> kv{0, {}};
  while (!r.done()) {
    Field f = r.next();
    if (f.number == kMapKey) {
      expect(f, kVarint, r, "map key");
      kv.first = as_int64(f.varint);
    } else if (f.number == kMapValue) {
      expect(f, kLength, r, "map value");
      kv.second = f.bytes;
    }
  }
  return kv;
}

StatNames read_stat_names(std::string_view plane) {
  StatNames names;
  Reader r(plane, "XPlane");
  while (!r.done()) {
    Field f = r.next();
    if (f.number != kPlaneStatMetadata) continue;
    expect(f, kLength, r, "stat_metadata");
    auto [key, value] = read_entry(f.bytes, "XPlane.stat_metadata entry");
    Reader m(value, "XStatMetadata");
    int64_t id = key;
    std::string name;
    while (!m.done()) {
      Field g = m.next();
      if (g.number == kStatMetaId) {
        expect(g, kVarint, m, "id");
        id = as_int64(g.varint);
      } else if (g.number == kStatMetaName) {
        expect(g, kLength, m, "name");
        name = std::string(g.bytes);
      }
    }
    names[key] = name;
    if (id != key) names.emplace(id, name);
  }
  return names;
}

EventMetadata read_event_metadata(std::string_view bytes, int64_t key, const StatNames& names,
                                  ExpansionBudget& budget) {
  Reader r(bytes, "XEventMetadata");
  EventMetadata m;
  m.id = key;
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case kEventMetaId:
        expect(f, kVarint, r, "id");
        break;  // the map key is what events refer to
      case kEventMetaName:
        expect(f, kLength, r, "name");
        m.name = valid_utf8(f.bytes);
        break;
      case kEventMetaDisplayName:
        expect(f, kLength, r, "display_name");
        m.display_name = valid_utf8(f.bytes);
        break;
      case kEventMetaMetadata:
        expect(f, kLength, r, "metadata");
        break;  // serialized side data, not read
      case kEventMetaStats:
        expect(f, kLength, r, "stats");
        m.stats.push_back(read_stat(f.bytes, names, budget));
        break;
      default:
        break;
    }
  }
  return m;
}

Event read_event(std::string_view bytes, const StatNames& names, ExpansionBudget& budget) {
  budget.charge(sizeof(Event), "XPlane events");
  Reader r(bytes, "XEvent");
  Event e;
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case kEventMetadataId:
        expect(f, kVarint, r, "metadata_id");
        e.metadata_id = as_int64(f.varint);
        break;
      case kEventOffsetPs:
        expect(f, kVarint, r, "offset_ps");
        e.offset_ps = as_int64(f.varint);
        break;
      case kEventDurationPs:
        expect(f, kVarint, r, "duration_ps");
        e.duration_ps = as_int64(f.varint);
        break;
      case kEventNumOccurrences:
        expect(f, kVarint, r, "num_occurrences");
        e.num_occurrences = as_int64(f.varint);
        break;
      case kEventStats:
        expect(f, kLength, r, "stats");
        e.stats.push_back(read_stat(f.bytes, names, budget));
        break;
      default:
        break;
    }
  }
  return e;
}

Line read_line(std::string_view bytes, const StatNames& names, ExpansionBudget& budget) {
  Reader r(bytes, "XLine");
  Line l;
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case kLineId:
        expect(f, kVarint, r, "id");
        l.id = as_int64(f.varint);
        break;
      case kLineDisplayId:
        expect(f, kVarint, r, "display_id");
        l.display_id = as_int64(f.varint);
        break;
      case kLineName:
        expect(f, kLength, r, "name");
        l.name = valid_utf8(f.bytes);
        break;
      case kLineDisplayName:
        expect(f, kLength, r, "display_name");
        l.display_name = valid_utf8(f.bytes);
        break;
      case kLineTimestampNs:
        expect(f, kVarint, r, "timestamp_ns");
        l.timestamp_ns = as_int64(f.varint);
        break;
      case kLineDurationPs:
        expect(f, kVarint, r, "duration_ps");
        l.duration_ps = as_int64(f.varint);
        break;
      case kLineEvents:
        expect(f, kLength, r, "events");
        l.events.push_back(read_event(f.bytes, names, budget));
        break;
      default:
        break;
    }
  }
  return l;
}

Plane read_plane(std::string_view bytes, ExpansionBudget& budget) {
  StatNames names = read_stat_names(bytes);
  Reader r(bytes, "XPlane");
  Plane p;
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case kPlaneId:
        expect(f, kVarint, r, "id");
        p.id = as_int64(f.varint);
        break;
      case kPlaneName:
        expect(f, kLength, r, "name");
        p.name = valid_utf8(f.bytes);
        break;
      case kPlaneLines:
        expect(f, kLength, r, "lines");
        p.lines.push_back(read_line(f.bytes, names, budget));
        break;
      case kPlaneEventMetadata: {
        expect(f, kLength, r, "event_metadata");
        auto [key, value] = read_entry(f.bytes, "XPlane.event_metadata entry");
        budget.charge(sizeof(EventMetadata), "XPlane event metadata");
        p.event_metadata.push_back(read_event_metadata(value, key, names, budget));
        break;
      }
      case kPlaneStatMetadata:
        expect(f, kLength, r, "stat_metadata");
        break;  // read first, by read_stat_names
      case kPlaneStats:
        expect(f, kLength, r, "stats");
        p.stats.push_back(read_stat(f.bytes, names, budget));
        break;
      default:
        break;
    }
  }
  std::stable_sort(p.event_metadata.begin(), p.event_metadata.end(),
                   [](const EventMetadata& a, const EventMetadata& b) { return a.id < b.id; });
  return p;
}

}  // namespace

void append_int64s(const Field& f, const Reader& r, const char* field, std::vector<int64_t>& out) {
  if (f.type == kVarint) {
    out.push_back(as_int64(f.varint));
    return;
  }
  expect(f, kLength, r, field);
  Reader packed(f.bytes, field);
  while (!packed.done()) out.push_back(as_int64(packed.read_varint()));
}

void decode_space(std::string_view bytes, Space& space, ExpansionBudget& budget) {
  Reader r(bytes, "XSpace");
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case kSpacePlanes:
        expect(f, kLength, r, "planes");
        space.planes.push_back(read_plane(f.bytes, budget));
        break;
      case kSpaceErrors:
        expect(f, kLength, r, "errors");
        space.errors.emplace_back(valid_utf8(f.bytes));
        break;
      case kSpaceWarnings:
        expect(f, kLength, r, "warnings");
        space.warnings.emplace_back(valid_utf8(f.bytes));
        break;
      case kSpaceHostnames:
        expect(f, kLength, r, "hostnames");
        space.hostnames.emplace_back(valid_utf8(f.bytes));
        break;
      default:
        r.fail(fmt::format("field {} is not an XSpace field", f.number));
    }
  }
}

bool looks_like_space(std::string_view prefix, uint64_t total_size) {
  if (prefix.empty()) return false;
  // The first field's declared length must fit the file; then its fields
  // that lie inside the prefix must decode as XPlane fields.
  const auto* p = reinterpret_cast<const uint8_t*>(prefix.data());
  // Writers emit fields in number order, so an XSpace starts with a plane.
  if (p[0] != ((kSpacePlanes << 3) | kLength)) return false;
  uint64_t len = 0;
  size_t k = 1;
  for (int shift = 0; k < prefix.size() && shift < 64; shift += 7, ++k) {
    len |= static_cast<uint64_t>(p[k] & 0x7f) << shift;
    if (!(p[k] & 0x80)) break;
  }
  ++k;
  if (k > prefix.size() || len > total_size - std::min<uint64_t>(k, total_size)) return false;
  std::string_view plane =
      prefix.substr(k, static_cast<size_t>(std::min<uint64_t>(len, prefix.size() - k)));
  Reader pr(plane, "XPlane");
  int fields = 0;
  try {
    while (!pr.done() && fields < 64) {
      Field f = pr.next();
      if (f.number < kPlaneId || f.number > kPlaneStats) return false;
      if ((f.number == kPlaneId) != (f.type == kVarint)) return false;
      if (f.number != kPlaneId && f.type != kLength) return false;
      ++fields;
    }
  } catch (const DecodeError&) {
    return fields > 0 && plane.size() < len;  // cut by the prefix, not broken
  }
  return fields > 0 || len == 0;
}

}  // namespace jarvis::xplane::wire
