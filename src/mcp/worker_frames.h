// The frames a forked worker (mcp/worker_call.h) sends its server over a
// pipe: one kind byte, an 8-byte length (host order: both ends are one
// binary), and a CBOR payload. CBOR, not JSON text: names from a trace may be
// invalid UTF-8, which json::dump refuses and CBOR carries as they are.
//
// The server reads them with WorkerFrameReader, which checks each payload's
// shape for its kind before the server acts on it: a frame that does not
// decode, or holds the wrong shape (a worker whose memory a bug corrupted),
// ends the stream (failed()), and the server kills the worker and fails the
// call, instead of an exception from deep in nlohmann leaving the worker
// unreaped. Fuzzed by fuzz/fuzz_worker_frames.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace jarvis::mcp {

enum class WorkerFrameKind : char {
  kProgress = 'p',   // [done (number), total (number), message (string)]
  kLog = 'l',        // [level (integer 0..7), message (string)]
  kTimeLimit = 't',  // milliseconds (an integer within +-2^40): ToolContext::start_time_limit
  kWritten = 'w',    // {"written": [string...], "claimed": [string...]}
  // {"id": [device, inode, size, mtime_ns], "key": string, "value": binary}: the
  // value's own CBOR as a byte string, which the server keeps as it came and
  // decodes when a call first reads it (decode_kept_value)
  kKept = 'k',
  kResult = 'r',  // a ToolResult (worker_call.cpp's result_to_json)
  kError = 'e'    // [message (string), ErrorKind (integer)]
};

struct WorkerFrame {
  WorkerFrameKind kind;
  nlohmann::json payload;
};

// A frame on the wire: header and CBOR body.
std::vector<uint8_t> encode_worker_frame(WorkerFrameKind kind, const nlohmann::json& payload);
// The kKept frame of {"id": id, "key": key, "value": binary(CBOR of value)},
// the bytes encode_worker_frame gives, without a copy of the value into that
// object (an x256 trace's insights analysis is 6 MB of JSON). The server
// reads the frame without building the value's tree (a copy of its bytes):
// the call that sent it is answered without waiting for that decoding.
std::vector<uint8_t> encode_kept_frame(const nlohmann::json& id, const std::string& key,
                                       const nlohmann::json& value);
// A kept value's CBOR as a kKept frame carries it, decoded; nullopt when it
// does not decode (the value is then not kept: the next call derives it).
std::optional<nlohmann::json> decode_kept_value(const std::vector<uint8_t>& cbor);

// Whether `payload` has the shape a frame of `kind` carries ("" when it
// does, else what is wrong).
std::string worker_frame_shape_error(WorkerFrameKind kind, const nlohmann::json& payload);

// Reads frames from the bytes of a pipe as they arrive, in pieces of any
// size. A frame is returned once all its bytes arrived; a stream that ends
// inside a frame is a worker that died mid-write (pending() > 0).
class WorkerFrameReader {
 public:
  // The largest payload a frame may declare: a result is bounded by the
  // tools' reply budgets far below it.
  static constexpr uint64_t kMaxPayload = uint64_t{1} << 32;

  // Appends `size` bytes and returns the frames they complete, up to the
  // first malformed one (an unknown kind, an oversized length, a payload
  // that is not CBOR or has the wrong shape): from there the reader has
  // failed and returns no more frames.
  std::vector<WorkerFrame> feed(const void* data, size_t size);
  // Why the stream failed, at which byte; nullopt while it has not.
  const std::optional<std::string>& failed() const { return failed_; }
  // Bytes received that do not complete a frame yet.
  size_t pending() const { return buffer_.size() - at_; }

 private:
  std::vector<uint8_t> buffer_;
  size_t at_ = 0;          // the first byte of buffer_ not yet read as a frame
  uint64_t consumed_ = 0;  // bytes dropped from buffer_'s front
  std::optional<std::string> failed_;
};

}  // namespace jarvis::mcp
