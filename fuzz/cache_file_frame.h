// A cache file (a trace snapshot, a step model's graph file) framed around a
// fuzzer's payload: the header of a real file of the kind with the payload's
// length, CRC-32 and MAC under the fixture cache's key written in, so that
// inputs get past the format and trust checks to the reader's own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include <isa-l/crc.h>

#include "base/keyed_mac.h"

namespace jarvis::fuzz {

// The header's layout (src/trace/snapshot.cpp): magic[8], version, item size,
// payload bytes (offset 16), payload CRC-32 (offset 24), reserved, MAC nonce
// (offset 32), MAC (offset 48, over the payload then bytes 0-47).
constexpr size_t kHeaderBytes = 64;
constexpr size_t kPayloadBytesAt = 16;
constexpr size_t kPayloadCrcAt = 24;
constexpr size_t kMacNonceAt = 32;
constexpr size_t kMacAt = 48;

// `header` (a real file's first kHeaderBytes) then `payload`, the header's
// length, CRC-32 and MAC those of `payload`.
inline std::string framed(const std::string& header, const std::string& payload,
                          const MacKey& mac_key) {
  std::string file = header;
  const uint64_t payload_bytes = payload.size();
  const uint32_t crc =
      crc32_gzip_refl(0, reinterpret_cast<const unsigned char*>(payload.data()), payload.size());
  std::memcpy(file.data() + kPayloadBytesAt, &payload_bytes, sizeof payload_bytes);
  std::memcpy(file.data() + kPayloadCrcAt, &crc, sizeof crc);
  MacNonce nonce;
  std::memcpy(nonce.data(), file.data() + kMacNonceAt, nonce.size());
  PayloadMac mac(mac_key, nonce);
  mac.update(payload.data(), payload.size());
  mac.update(file.data(), kMacAt);
  const MacTag tag = mac.finish();
  std::memcpy(file.data() + kMacAt, tag.data(), tag.size());
  return file + payload;
}

}  // namespace jarvis::fuzz
