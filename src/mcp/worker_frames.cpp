#include "mcp/worker_frames.h"

#include <cstdint>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace jarvis::mcp {
namespace {

using json = nlohmann::json;

constexpr size_t kWorkerFrameHeader = 9;  // kind byte, 8-byte length

bool known_worker_frame_kind(char kind) {
  switch (static_cast<WorkerFrameKind>(kind)) {
    case WorkerFrameKind::kProgress:
    case WorkerFrameKind::kLog:
    case WorkerFrameKind::kTimeLimit:
    case WorkerFrameKind::kWritten:
    case WorkerFrameKind::kKept:
    case WorkerFrameKind::kResult:
    case WorkerFrameKind::kError:
      return true;
  }
  return false;
}

bool is_string_array(const json& j) {
  if (!j.is_array()) return false;
  for (const auto& item : j)
    if (!item.is_string()) return false;
  return true;
}

// An integer in [lo, hi] (CBOR integers decode as signed or unsigned).
bool is_integer_in(const json& j, int64_t lo, int64_t hi) {
  if (j.is_number_unsigned()) return j.get<uint64_t>() <= static_cast<uint64_t>(hi);
  if (j.is_number_integer()) return j.get<int64_t>() >= lo && j.get<int64_t>() <= hi;
  return false;
}

std::string result_shape_error(const json& r) {
  if (!r.is_object()) return "a result that is not an object";
  for (const char* key : {"structured", "text", "content", "rows", "full_only", "next", "caveats"})
    if (!r.contains(key)) return fmt::format("a result without '{}'", key);
  if (!r.at("text").is_string()) return "a result whose text is not a string";
  if (!is_string_array(r.at("full_only"))) return "a result whose full_only is not a string list";
  if (!r.at("rows").is_array()) return "a result whose rows are not a list";
  for (const auto& row : r.at("rows"))
    if (!row.is_array() || row.size() != 2 || !row.at(0).is_string() ||
        !(row.at(1).is_null() || row.at(1).is_number_unsigned()))
      return "a result row list that is not [pointer, total]";
  if (!r.at("caveats").is_array()) return "a result whose caveats are not a list";
  for (const auto& c : r.at("caveats"))
    if (!c.is_object() || !c.contains("trace") || !c.at("trace").is_string())
      return "a caveat without its trace";
  return "";
}

}  // namespace

namespace {

// A frame's header on `frame`, whose body follows the header's room.
std::vector<uint8_t> with_header(WorkerFrameKind kind, std::vector<uint8_t> frame) {
  frame[0] = static_cast<uint8_t>(kind);
  const uint64_t size = frame.size() - kWorkerFrameHeader;
  std::memcpy(frame.data() + 1, &size, sizeof size);
  return frame;
}

}  // namespace

std::vector<uint8_t> encode_worker_frame(WorkerFrameKind kind, const json& payload) {
  std::vector<uint8_t> frame(kWorkerFrameHeader, 0);
  json::to_cbor(payload, frame);  // appends the body after the header's room
  return with_header(kind, std::move(frame));
}

std::vector<uint8_t> encode_kept_frame(const json& id, const std::string& key, const json& value) {
  // The value goes as a byte string of its own CBOR (json::binary), moved
  // into the payload, not copied; the frame's room is reserved at once.
  json payload = json::object();
  payload["id"] = id;
  payload["key"] = key;
  payload["value"] = json::binary(json::to_cbor(value));
  std::vector<uint8_t> frame(kWorkerFrameHeader, 0);
  frame.reserve(kWorkerFrameHeader + 64 + key.size() + payload["value"].get_binary().size());
  json::to_cbor(payload, frame);  // appends the body after the header's room
  return with_header(WorkerFrameKind::kKept, std::move(frame));
}

std::optional<json> decode_kept_value(const std::vector<uint8_t>& cbor) {
  try {
    json value = json::from_cbor(cbor, /*strict=*/true, /*allow_exceptions=*/false);
    if (value.is_discarded()) return std::nullopt;
    return value;
  } catch (const json::exception&) {  // thrown whatever allow_exceptions says (see feed)
    return std::nullopt;
  }
}

std::string worker_frame_shape_error(WorkerFrameKind kind, const json& p) {
  switch (kind) {
    case WorkerFrameKind::kProgress:
      return p.is_array() && p.size() == 3 && p[0].is_number() && p[1].is_number() &&
                     p[2].is_string()
                 ? ""
                 : "a progress frame that is not [done, total, message]";
    case WorkerFrameKind::kLog:
      return p.is_array() && p.size() == 2 && is_integer_in(p[0], 0, 7) && p[1].is_string()
                 ? ""
                 : "a log frame that is not [level, message]";
    case WorkerFrameKind::kTimeLimit:
      return is_integer_in(p, -(int64_t{1} << 40), int64_t{1} << 40)
                 ? ""
                 : "a time limit that is not a duration";
    case WorkerFrameKind::kWritten:
      return p.is_object() && p.contains("written") && p.contains("claimed") &&
                     is_string_array(p.at("written")) && is_string_array(p.at("claimed"))
                 ? ""
                 : "a written-files frame that is not {written, claimed}";
    case WorkerFrameKind::kKept: {
      const bool id_ok = p.is_object() && p.contains("id") && p.at("id").is_array() &&
                         p.at("id").size() == 4 && is_integer_in(p.at("id")[0], 0, INT64_MAX) &&
                         is_integer_in(p.at("id")[1], 0, INT64_MAX) &&
                         is_integer_in(p.at("id")[2], 0, INT64_MAX) &&
                         is_integer_in(p.at("id")[3], INT64_MIN, INT64_MAX);
      return id_ok && p.contains("key") && p.at("key").is_string() && p.contains("value") &&
                     p.at("value").is_binary()
                 ? ""
                 : "a kept-value frame that is not {id, key, value (bytes)}";
    }
    case WorkerFrameKind::kResult:
      return result_shape_error(p);
    case WorkerFrameKind::kError:
      return p.is_array() && p.size() == 2 && p[0].is_string() && is_integer_in(p[1], 0, 4)
                 ? ""
                 : "an error frame that is not [message, kind]";
  }
  return "a frame of an unknown kind";
}

std::vector<WorkerFrame> WorkerFrameReader::feed(const void* data, size_t size) {
  std::vector<WorkerFrame> frames;
  if (failed_) return frames;
  const auto* bytes = static_cast<const uint8_t*>(data);
  buffer_.insert(buffer_.end(), bytes, bytes + size);
  const auto fail = [&](const std::string& why) {
    failed_ = fmt::format("the worker sent a malformed frame at byte {}: {}", consumed_ + at_, why);
    buffer_.clear();
    at_ = 0;
    return std::move(frames);
  };
  while (buffer_.size() - at_ >= kWorkerFrameHeader) {
    const char kind = static_cast<char>(buffer_[at_]);
    if (!known_worker_frame_kind(kind))
      return fail(
          fmt::format("unknown kind {}", static_cast<int>(static_cast<unsigned char>(kind))));
    uint64_t length = 0;
    std::memcpy(&length, buffer_.data() + at_ + 1, sizeof length);
    if (length > kMaxPayload) return fail(fmt::format("a payload of {} bytes", length));
    if (buffer_.size() - at_ - kWorkerFrameHeader < length) break;
    const auto begin = buffer_.begin() + static_cast<std::ptrdiff_t>(at_ + kWorkerFrameHeader);
    json payload;
    try {
      payload = json::from_cbor(begin, begin + static_cast<std::ptrdiff_t>(length),
                                /*strict=*/true, /*allow_exceptions=*/false);
    } catch (const json::exception& e) {
      // nlohmann throws some errors whatever allow_exceptions says (found by
      // fuzz_worker_frames: out_of_range.408 for a map declaring 10^19 entries).
      return fail(fmt::format("a payload that is not CBOR ({})", e.what()));
    }
    if (payload.is_discarded()) return fail("a payload that is not CBOR");
    const auto frame_kind = static_cast<WorkerFrameKind>(kind);
    if (std::string why = worker_frame_shape_error(frame_kind, payload); !why.empty())
      return fail(why);
    frames.push_back({frame_kind, std::move(payload)});
    at_ += kWorkerFrameHeader + length;
  }
  // Keep what is not yet a frame; drop the rest once it is most of the buffer.
  if (at_ > 0 && at_ * 2 >= buffer_.size()) {
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(at_));
    consumed_ += at_;
    at_ = 0;
  }
  return frames;
}

}  // namespace jarvis::mcp
