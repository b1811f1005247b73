#include "base/keyed_mac.h"

#include <sys/random.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace jarvis {

static_assert(std::endian::native == std::endian::little,
              "POLYVAL blocks are read as little-endian 64-bit words");

namespace {

// ---------------------------------------------------------------- SHA-256

class Sha256 {
 public:
  void update(const uint8_t* p, size_t n) {
    bytes_ += n;
    while (n > 0) {
      size_t take = std::min(n, sizeof block_ - used_);
      std::memcpy(block_ + used_, p, take);
      used_ += take;
      p += take;
      n -= take;
      if (used_ == sizeof block_) {
        compress(block_);
        used_ = 0;
      }
    }
  }
  Sha256Digest finish() {
    uint64_t bits = bytes_ * 8;
    static constexpr uint8_t kOne = 0x80;
    update(&kOne, 1);
    static constexpr uint8_t kZeros[64] = {};
    update(kZeros, (sizeof block_ + 56 - used_) % sizeof block_);
    uint8_t length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
    update(length, 8);
    Sha256Digest out;
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(state_[i] >> (24 - 8 * j));
    return out;
  }

 private:
  void compress(const uint8_t* block) {
    static constexpr uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = uint32_t{block[4 * i]} << 24 | uint32_t{block[4 * i + 1]} << 16 |
             uint32_t{block[4 * i + 2]} << 8 | uint32_t{block[4 * i + 3]};
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = std::rotr(w[i - 15], 7) ^ std::rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = std::rotr(w[i - 2], 17) ^ std::rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3], e = state_[4],
             f = state_[5], g = state_[6], h = state_[7];
    for (int i = 0; i < 64; ++i) {
      uint32_t t1 = h + (std::rotr(e, 6) ^ std::rotr(e, 11) ^ std::rotr(e, 25)) +
                    ((e & f) ^ (~e & g)) + k[i] + w[i];
      uint32_t t2 =
          (std::rotr(a, 2) ^ std::rotr(a, 13) ^ std::rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    state_[0] += a;
    state_[1] += b;
    state_[2] += c;
    state_[3] += d;
    state_[4] += e;
    state_[5] += f;
    state_[6] += g;
    state_[7] += h;
  }

  uint32_t state_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  uint8_t block_[64] = {};
  size_t used_ = 0;
  uint64_t bytes_ = 0;
};

// ---------------------------------------------------------------- POLYVAL

// A field element of GF(2^128) as POLYVAL stores it: bytes 0-7 and 8-15 of
// its little-endian encoding.
struct Fe {
  uint64_t lo, hi;
};

Fe load_fe(const uint8_t* p) {
  Fe f;
  std::memcpy(&f.lo, p, 8);
  std::memcpy(&f.hi, p + 8, 8);
  return f;
}

// The reduction constant of x^128 + x^127 + x^126 + x^121 + 1 in the
// Montgomery form POLYVAL's dot() uses (RFC 8452 appendix A).
constexpr uint64_t kPolyHigh = 0xc200000000000000ull;

// Carry-less 64x64 -> 128-bit product, without branches on the (secret) operands.
Fe clmul64(uint64_t a, uint64_t b) {
  Fe r{0, 0};
  for (int i = 0; i < 64; ++i) {
    uint64_t mask = 0 - ((b >> i) & 1);
    r.lo ^= (a << i) & mask;
    if (i > 0) r.hi ^= (a >> (64 - i)) & mask;
  }
  return r;
}

// (hi:lo) * x^-128 mod the polynomial: two folds of the low half.
Fe reduce(Fe lo, Fe hi) {
  for (int fold = 0; fold < 2; ++fold) {
    Fe p = clmul64(lo.lo, kPolyHigh);
    lo = Fe{lo.hi ^ p.lo, lo.lo ^ p.hi};
  }
  return Fe{hi.lo ^ lo.lo, hi.hi ^ lo.hi};
}

// dot(a, b) = a * b * x^-128 (RFC 8452 section 3).
Fe dot_portable(Fe a, Fe b) {
  Fe low = clmul64(a.lo, b.lo), high = clmul64(a.hi, b.hi);
  Fe cross_a = clmul64(a.lo, b.hi), cross_b = clmul64(a.hi, b.lo);
  uint64_t mid_lo = cross_a.lo ^ cross_b.lo, mid_hi = cross_a.hi ^ cross_b.hi;
  return reduce(Fe{low.lo, low.hi ^ mid_lo}, Fe{high.lo ^ mid_hi, high.hi});
}

void absorb_portable(Fe& acc, Fe h, const uint8_t* blocks, size_t count) {
  for (size_t i = 0; i < count; ++i, blocks += 16) {
    Fe x = load_fe(blocks);
    acc = dot_portable(Fe{acc.lo ^ x.lo, acc.hi ^ x.hi}, h);
  }
}

#if defined(__x86_64__)

#define JARVIS_CLMUL __attribute__((target("pclmul,sse2")))

JARVIS_CLMUL inline __m128i load128(const void* p) {
  return _mm_loadu_si128(static_cast<const __m128i*>(p));
}

// The three partial products of a * b (low, middle, high) added onto sums.
JARVIS_CLMUL inline void multiply_add(__m128i a, __m128i b, __m128i& lo, __m128i& mid,
                                      __m128i& hi) {
  lo = _mm_xor_si128(lo, _mm_clmulepi64_si128(a, b, 0x00));
  hi = _mm_xor_si128(hi, _mm_clmulepi64_si128(a, b, 0x11));
  mid = _mm_xor_si128(
      mid, _mm_xor_si128(_mm_clmulepi64_si128(a, b, 0x01), _mm_clmulepi64_si128(a, b, 0x10)));
}

// The sum of products times x^-128: reduce() with the same two folds.
JARVIS_CLMUL inline __m128i reduce_products(__m128i lo, __m128i mid, __m128i hi) {
  lo = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
  hi = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));
  const __m128i poly = _mm_set_epi64x(static_cast<long long>(kPolyHigh), 1);
  for (int fold = 0; fold < 2; ++fold) {
    __m128i p = _mm_clmulepi64_si128(lo, poly, 0x10);  // lo.low * poly.high
    lo = _mm_xor_si128(_mm_shuffle_epi32(lo, 0x4e), p);
  }
  return _mm_xor_si128(hi, lo);
}

// Horner's rule four blocks at a time: (S + X0)·H^4 + X1·H^3 + X2·H^2 + X3·H
// summed unreduced (dot is linear), so one reduction serves four blocks and
// the multiplies of a group run in parallel.
JARVIS_CLMUL void absorb_clmul(Fe& acc, const uint64_t powers[8], const uint8_t* p, size_t count) {
  __m128i s = _mm_set_epi64x(static_cast<long long>(acc.hi), static_cast<long long>(acc.lo));
  const __m128i h1 = load128(powers), h2 = load128(powers + 2), h3 = load128(powers + 4),
                h4 = load128(powers + 6);
  size_t i = 0;
  for (; i + 4 <= count; i += 4, p += 64) {
    __m128i lo = _mm_setzero_si128(), mid = lo, hi = lo;
    multiply_add(_mm_xor_si128(s, load128(p)), h4, lo, mid, hi);
    multiply_add(load128(p + 16), h3, lo, mid, hi);
    multiply_add(load128(p + 32), h2, lo, mid, hi);
    multiply_add(load128(p + 48), h1, lo, mid, hi);
    s = reduce_products(lo, mid, hi);
  }
  for (; i < count; ++i, p += 16) {
    __m128i lo = _mm_setzero_si128(), mid = lo, hi = lo;
    multiply_add(_mm_xor_si128(s, load128(p)), h1, lo, mid, hi);
    s = reduce_products(lo, mid, hi);
  }
  alignas(16) uint64_t out[2];
  _mm_store_si128(reinterpret_cast<__m128i*>(out), s);
  acc = Fe{out[0], out[1]};
}

bool have_clmul() {
  static const bool have = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse2");
  return have;
}

#else

bool have_clmul() {
  return false;
}
void absorb_clmul(Fe&, const uint64_t*, const uint8_t*, size_t) {}

#endif

void absorb(Fe& acc, const uint64_t powers[8], const uint8_t* blocks, size_t count, bool portable) {
  if (!portable && have_clmul())
    absorb_clmul(acc, powers, blocks, count);
  else
    absorb_portable(acc, Fe{powers[0], powers[1]}, blocks, count);
}

// H^1..H^4 (in dot's sense: H^k = dot(H^(k-1), H)).
void hash_key_powers(Fe h, uint64_t powers[8]) {
  Fe power = h;
  for (int k = 0; k < 4; ++k) {
    powers[2 * k] = power.lo;
    powers[2 * k + 1] = power.hi;
    power = dot_portable(power, h);
  }
}

}  // namespace

Sha256Digest hmac_sha256(std::span<const uint8_t> key, std::span<const uint8_t> message) {
  uint8_t block[64] = {};
  if (key.size() > sizeof block) {
    Sha256 long_key;
    long_key.update(key.data(), key.size());
    Sha256Digest d = long_key.finish();
    std::memcpy(block, d.data(), d.size());
  } else if (!key.empty()) {
    std::memcpy(block, key.data(), key.size());
  }
  uint8_t pad[64];
  Sha256 inner, outer;
  for (size_t i = 0; i < sizeof pad; ++i) pad[i] = block[i] ^ 0x36;
  inner.update(pad, sizeof pad);
  inner.update(message.data(), message.size());
  Sha256Digest inner_digest = inner.finish();
  for (size_t i = 0; i < sizeof pad; ++i) pad[i] = block[i] ^ 0x5c;
  outer.update(pad, sizeof pad);
  outer.update(inner_digest.data(), inner_digest.size());
  return outer.finish();
}

void fill_random(std::span<uint8_t> out) {
  size_t filled = 0;
  while (filled < out.size()) {
    ssize_t got = ::getrandom(out.data() + filled, out.size() - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("getrandom failed (errno " + std::to_string(errno) + ")");
    }
    filled += static_cast<size_t>(got);
  }
}

PayloadMac::PayloadMac(const MacKey& key, const MacNonce& nonce) {
  // A label keeps these derived keys apart from any other use of the key.
  static constexpr char kLabel[] = "jarvis payload MAC v1";
  uint8_t message[sizeof kLabel + sizeof(MacNonce)];
  std::memcpy(message, kLabel, sizeof kLabel);
  std::memcpy(message + sizeof kLabel, nonce.data(), nonce.size());
  Sha256Digest derived = hmac_sha256(key, message);
  Fe h = load_fe(derived.data()), pad = load_fe(derived.data() + 16);
  pad_[0] = pad.lo;
  pad_[1] = pad.hi;
  hash_key_powers(h, powers_);
}

void PayloadMac::absorb_blocks(const uint8_t* blocks, size_t count) {
  Fe acc{acc_[0], acc_[1]};
  absorb(acc, powers_, blocks, count, false);
  acc_[0] = acc.lo;
  acc_[1] = acc.hi;
}

void PayloadMac::update(const void* data, size_t n) {
  auto p = static_cast<const uint8_t*>(data);
  total_bytes_ += n;
  if (partial_bytes_ > 0) {
    size_t take = std::min(n, sizeof partial_ - partial_bytes_);
    std::memcpy(partial_ + partial_bytes_, p, take);
    partial_bytes_ += take;
    p += take;
    n -= take;
    if (partial_bytes_ < sizeof partial_) return;
    absorb_blocks(partial_, 1);
    partial_bytes_ = 0;
  }
  size_t whole = n / 16;
  absorb_blocks(p, whole);
  std::memcpy(partial_, p + whole * 16, n % 16);
  partial_bytes_ = n % 16;
}

MacTag PayloadMac::finish() {
  if (partial_bytes_ > 0) {
    std::memset(partial_ + partial_bytes_, 0, sizeof partial_ - partial_bytes_);
    absorb_blocks(partial_, 1);
  }
  // The length closes the message: data ending in zero bytes and the same
  // data without them hash apart.
  uint8_t length[16] = {};
  std::memcpy(length, &total_bytes_, sizeof total_bytes_);
  absorb_blocks(length, 1);
  MacTag tag;
  uint64_t words[2] = {acc_[0] ^ pad_[0], acc_[1] ^ pad_[1]};
  std::memcpy(tag.data(), words, sizeof words);
  return tag;
}

bool tags_equal(const MacTag& a, const MacTag& b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

std::array<uint8_t, 16> mac_detail::polyval(const std::array<uint8_t, 16>& h,
                                            std::span<const uint8_t> blocks, bool portable) {
  if (blocks.size() % 16 != 0) throw std::invalid_argument("POLYVAL takes whole 16-byte blocks");
  uint64_t powers[8];
  hash_key_powers(load_fe(h.data()), powers);
  Fe acc{0, 0};
  absorb(acc, powers, blocks.data(), blocks.size() / 16, portable);
  std::array<uint8_t, 16> out;
  std::memcpy(out.data(), &acc.lo, 8);
  std::memcpy(out.data() + 8, &acc.hi, 8);
  return out;
}

}  // namespace jarvis
