// The frames a forked worker sends its server (mcp/worker_frames.h): read in
// pieces as a pipe hands them over, each payload checked for its kind's shape,
// and a malformed frame ending the stream with the frames before it kept
// (fuzz/fuzz_worker_frames.cpp checks the same properties on fuzzed bytes).
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "mcp/worker_frames.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::encode_worker_frame;
using jarvis::mcp::WorkerFrame;
using jarvis::mcp::WorkerFrameKind;
using jarvis::mcp::WorkerFrameReader;
using json = nlohmann::json;

std::vector<uint8_t> operator+(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A frame written by hand: kind byte, little-endian length, body.
std::vector<uint8_t> raw_frame(char kind, const std::vector<uint8_t>& body) {
  std::vector<uint8_t> out{static_cast<uint8_t>(kind)};
  for (int k = 0; k < 8; ++k) out.push_back(static_cast<uint8_t>((body.size() >> (8 * k)) & 0xff));
  return out + body;
}

TEST_CASE("worker frames: read whole or a byte at a time, invalid UTF-8 carried as it is") {
  const json result = {{"structured", {{"name", "k\xff"}}},
                       {"text", "one row"},
                       {"content", nullptr},
                       {"rows", json::array({{"/rows", 1}})},
                       {"full_only", json::array()},
                       {"next", nullptr},
                       {"caveats", json::array({{{"trace", "t1"}}})}};
  // A kept value travels as its own CBOR in a byte string (decoded where a
  // call reads it): the frame made without copying the value into the
  // object is the object's frame, and its bytes decode to the value.
  const json kept_value = {1, "k"};
  const json kept = {{"id", {2049, 77, 4096, -5}},
                     {"key", "insights:H100"},
                     {"value", json::binary(json::to_cbor(kept_value))}};
  CHECK(jarvis::mcp::encode_kept_frame(kept["id"], "insights:H100", kept_value) ==
        encode_worker_frame(WorkerFrameKind::kKept, kept));
  const json analysis = {{"findings", {{{"row", {{"uids", {1, 2, 3}}}}, {"line", "x\n"}}}},
                         {"plan", nullptr}};
  CHECK(jarvis::mcp::decode_kept_value(json::to_cbor(analysis)) == analysis);
  CHECK_FALSE(jarvis::mcp::decode_kept_value({0xff, 0x00}).has_value());
  // Byte strings of every length class CBOR has (1-byte to 4-byte lengths).
  for (size_t size : {size_t{3}, size_t{100}, size_t{1000}, size_t{70000}}) {
    CAPTURE(size);
    const json big = std::string(size, 'x');
    const json as_object = {
        {"id", kept["id"]}, {"key", "k"}, {"value", json::binary(json::to_cbor(big))}};
    CHECK(jarvis::mcp::encode_kept_frame(kept["id"], "k", big) ==
          encode_worker_frame(WorkerFrameKind::kKept, as_object));
  }
  const auto stream = encode_worker_frame(WorkerFrameKind::kProgress, {1, 4, "loading"}) +
                      encode_worker_frame(WorkerFrameKind::kTimeLimit, 2000) +
                      encode_worker_frame(WorkerFrameKind::kKept, kept) +
                      encode_worker_frame(WorkerFrameKind::kResult, result);
  // The header is the kind and the body's length; the body is CBOR.
  CHECK(stream[0] == 'p');
  uint64_t length = 0;
  std::memcpy(&length, stream.data() + 1, 8);
  CHECK(length == json::to_cbor(json{1, 4, "loading"}).size());
  for (size_t piece : {stream.size(), size_t{1}, size_t{5}}) {
    CAPTURE(piece);
    WorkerFrameReader reader;
    std::vector<WorkerFrame> frames;
    for (size_t at = 0; at < stream.size(); at += piece)
      for (auto& f : reader.feed(stream.data() + at, std::min(piece, stream.size() - at)))
        frames.push_back(std::move(f));
    REQUIRE(frames.size() == 4);
    CHECK(frames[0].kind == WorkerFrameKind::kProgress);
    CHECK(frames[0].payload == json{1, 4, "loading"});
    CHECK(frames[1].payload == 2000);
    CHECK(frames[2].kind == WorkerFrameKind::kKept);
    CHECK(frames[2].payload == kept);
    CHECK(frames[3].payload["structured"]["name"].get<std::string>() == "k\xff");
    CHECK_FALSE(reader.failed());
    CHECK(reader.pending() == 0);
  }
}

TEST_CASE("worker frames: a malformed frame ends the stream, the frames before it are kept") {
  const auto good = encode_worker_frame(WorkerFrameKind::kLog, {2, "note"});
  struct Bad {
    const char* what;
    std::vector<uint8_t> frame;
    const char* reason;
  };
  const std::vector<Bad> cases = {
      {"unknown kind", raw_frame('z', {0xf6}), "unknown kind 122"},
      {"not CBOR", raw_frame('l', {0xff, 0x00}), "not CBOR"},
      {"CBOR with bytes after it", raw_frame('t', {0x01, 0x02}), "not CBOR"},
      {"a progress frame without its message",
       encode_worker_frame(WorkerFrameKind::kProgress, {1, 2}), "progress frame"},
      {"an error kind past ErrorKind", encode_worker_frame(WorkerFrameKind::kError, {"x", 9}),
       "error frame"},
      {"a log level past Emergency", encode_worker_frame(WorkerFrameKind::kLog, {8, "x"}),
       "log frame"},
      {"a result without caveats", encode_worker_frame(WorkerFrameKind::kResult, {{"text", "t"}}),
       "without"},
      {"a written list of numbers",
       encode_worker_frame(WorkerFrameKind::kWritten,
                           {{"written", {1}}, {"claimed", json::array()}}),
       "written-files"},
      {"a kept value without its key",
       encode_worker_frame(WorkerFrameKind::kKept, {{"id", {1, 2, 3, 4}}, {"value", 1}}),
       "kept-value frame"},
      {"a kept value whose file identity is a string",
       encode_worker_frame(WorkerFrameKind::kKept,
                           {{"id", "t1"}, {"key", "k"}, {"value", json::binary({0xf6})}}),
       "kept-value frame"},
      {"a kept value that is not its CBOR in bytes",
       encode_worker_frame(WorkerFrameKind::kKept,
                           {{"id", {1, 2, 3, 4}}, {"key", "k"}, {"value", 1}}),
       "kept-value frame"},
      {"a map declaring 2^63 entries (nlohmann throws whatever allow_exceptions says)",
       raw_frame('r', {0xbb, 0x80, 0, 0, 0, 0, 0, 0, 0}), "not CBOR"},
      {"a length past 4 GiB", raw_frame('r', {}) /* length patched below */, "payload of"},
  };
  for (Bad c : cases) {
    CAPTURE(c.what);
    if (std::string(c.reason) == "payload of") c.frame[1] = c.frame[5] = 1;  // 2^32 + 1 bytes
    const auto stream = good + c.frame + good;
    WorkerFrameReader reader;
    const std::vector<WorkerFrame> frames = reader.feed(stream.data(), stream.size());
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].payload == json{2, "note"});
    REQUIRE(reader.failed());
    CHECK(reader.failed()->find(c.reason) != std::string::npos);
    CHECK(reader.failed()->find("at byte " + std::to_string(good.size())) != std::string::npos);
    // Nothing more is read from a failed stream.
    CHECK(reader.feed(good.data(), good.size()).empty());
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
