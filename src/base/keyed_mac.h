// Message authentication for the files jarvis caches for itself (trace
// snapshots): a keyed tag that only the holder of a per-user secret key can
// compute, so a cache file edited or copied in by someone else is not trusted.
//
// No library: libcrypto costs every process ~1-4 ms to load (the reason the
// HTTP transport and the workbook writer are modules), and a snapshot load is
// a few milliseconds in all. Debian's libsodium (0.1 ms to load) was built
// in and measured (issue 62, 2026-11-27, this project's 2-core VM): on the
// 24.5 MB snapshot of gpt2_x32 its Poly1305 (SSE2) took 16 ms inside a load
// against ~8 ms for the POLYVAL below (a load without any MAC: 4.4 ms), so a
// second load cost 0.12x of the JSON load against 0.06x, past the 0.1x
// target; keyed BLAKE2b over the payload (0.6 GB/s alone against Poly1305's
// 3.9 and POLYVAL's 5.0) would cost more still. So the MAC stays here.
//
//   hmac_sha256: HMAC-SHA256 (RFC 2104, FIPS 180-4), for short inputs (key
//     derivation); a portable SHA-256 at ~200-400 MB/s.
//   PayloadMac: a Carter-Wegman MAC for bulk data at ~10 GB/s with PCLMULQDQ:
//     the POLYVAL universal hash (RFC 8452) of the data and its length under a
//     per-message hash key H, masked with a per-message pad; H and the pad are
//     HMAC-SHA256(key, label || nonce) for a fresh random nonce per message.
//     A forgery succeeds with probability about (blocks / 2^128).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace jarvis {

using MacKey = std::array<uint8_t, 32>;
using MacNonce = std::array<uint8_t, 16>;
using MacTag = std::array<uint8_t, 16>;
using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest hmac_sha256(std::span<const uint8_t> key, std::span<const uint8_t> message);

// `count` bytes from the kernel's CSPRNG (getrandom). Throws std::runtime_error
// when none can be had (never silently weaker).
void fill_random(std::span<uint8_t> out);

class PayloadMac {
 public:
  PayloadMac(const MacKey& key, const MacNonce& nonce);
  // Feeds the next `n` bytes (any split of the message gives the same tag).
  void update(const void* data, size_t n);
  // The tag of everything fed; the object is spent.
  MacTag finish();

 private:
  void absorb_blocks(const uint8_t* blocks, size_t count);

  uint64_t pad_[2];  // XORed onto the hash: the tag hides the hash key
  uint64_t acc_[2] = {0, 0};
  uint64_t powers_[8];  // the hash key H^1..H^4 (dot powers): four blocks per reduction
  uint8_t partial_[16];
  size_t partial_bytes_ = 0;
  uint64_t total_bytes_ = 0;
};

// Equality in time independent of where two tags differ.
bool tags_equal(const MacTag& a, const MacTag& b);

namespace mac_detail {
// POLYVAL(H, X_1..X_n) of whole 16-byte blocks (RFC 8452 section 3), for the
// test vectors; `portable` forces the code used without PCLMULQDQ.
std::array<uint8_t, 16> polyval(const std::array<uint8_t, 16>& h, std::span<const uint8_t> blocks,
                                bool portable);
}  // namespace mac_detail

}  // namespace jarvis
