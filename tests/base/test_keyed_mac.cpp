// The snapshot MAC's primitives against their published test vectors
// (HMAC-SHA256: RFC 4231; POLYVAL: RFC 8452 appendix A), the PCLMULQDQ path
// against the portable one, and the payload MAC's split invariance and
// sensitivity to every input.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "base/keyed_mac.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;

namespace {

std::vector<uint8_t> from_hex(std::string_view hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

template <class Bytes>
std::string to_hex(const Bytes& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

std::vector<uint8_t> bytes_of(std::string_view s) {
  return {s.begin(), s.end()};
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(gen());
  return out;
}

MacTag tag_of(const MacKey& key, const MacNonce& nonce, const std::vector<uint8_t>& data,
              size_t split) {
  PayloadMac mac(key, nonce);
  mac.update(data.data(), split);
  mac.update(data.data() + split, data.size() - split);
  return mac.finish();
}

}  // namespace

TEST_CASE("keyed_mac: HMAC-SHA256 gives the RFC 4231 test vectors") {
  CHECK(to_hex(hmac_sha256(std::vector<uint8_t>(20, 0x0b), bytes_of("Hi There"))) ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  CHECK(to_hex(hmac_sha256(bytes_of("Jefe"), bytes_of("what do ya want for nothing?"))) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK(to_hex(hmac_sha256(std::vector<uint8_t>(20, 0xaa), std::vector<uint8_t>(50, 0xdd))) ==
        "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  // A key longer than SHA-256's block is hashed first.
  CHECK(to_hex(hmac_sha256(std::vector<uint8_t>(131, 0xaa),
                           bytes_of("Test Using Larger Than Block-Size Key - Hash Key First"))) ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST_CASE("keyed_mac: POLYVAL gives the RFC 8452 test vector, with and without PCLMULQDQ") {
  std::array<uint8_t, 16> h;
  auto h_bytes = from_hex("25629347589242761d31f826ba4b757b");
  std::copy(h_bytes.begin(), h_bytes.end(), h.begin());
  auto blocks = from_hex("4f4f95668c83dfb6401762bb2d01a262d1a24ddd2721d006bbe45f20d3c9f362");
  for (bool portable : {false, true}) {
    CAPTURE(portable);
    CHECK(to_hex(mac_detail::polyval(h, blocks, portable)) == "f7a3b47b846119fae5b7866cf5e5b77e");
  }
  // Four-block groups and single blocks agree with the portable Horner loop.
  for (size_t n_blocks : {1u, 3u, 4u, 5u, 8u, 13u, 64u}) {
    CAPTURE(n_blocks);
    auto data = random_bytes(16 * n_blocks, static_cast<uint32_t>(n_blocks));
    auto key = random_bytes(16, 99);
    std::copy(key.begin(), key.end(), h.begin());
    CHECK(mac_detail::polyval(h, data, false) == mac_detail::polyval(h, data, true));
  }
}

TEST_CASE(
    "keyed_mac: the payload MAC depends on the key, the nonce and every byte, not the split") {
  MacKey key{};
  key[0] = 1;
  MacNonce nonce{};
  nonce[3] = 7;
  auto data = random_bytes(1000, 5);
  MacTag whole = tag_of(key, nonce, data, 0);
  for (size_t split : {1u, 15u, 16u, 17u, 64u, 999u, 1000u})
    CHECK(tag_of(key, nonce, data, split) == whole);

  MacKey other_key = key;
  other_key[31] ^= 1;
  CHECK_FALSE(tag_of(other_key, nonce, data, 0) == whole);
  MacNonce other_nonce = nonce;
  other_nonce[0] ^= 1;
  CHECK_FALSE(tag_of(key, other_nonce, data, 0) == whole);
  for (size_t at : {0u, 500u, 999u}) {
    auto edited = data;
    edited[at] ^= 0x40;
    CHECK_FALSE(tag_of(key, nonce, edited, 0) == whole);
  }
  // Trailing zero bytes count (the length closes the message).
  auto longer = data;
  longer.push_back(0);
  CHECK_FALSE(tag_of(key, nonce, longer, 0) == whole);
  CHECK(tags_equal(whole, tag_of(key, nonce, data, 300)));
  CHECK_FALSE(tags_equal(whole, tag_of(key, nonce, longer, 0)));
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
