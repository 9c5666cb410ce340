// Counter-based random numbers: every value is a pure function of (key, counter), so
// any rank can produce any element of a random stream without producing the others.
// Used for the data of a step and for parameter initialisation.
#pragma once

#include <array>    // std::array
#include <cmath>    // std::log, std::sqrt, std::cos
#include <cstdint>  // uint32_t, uint64_t
#include <string>   // std::string

namespace trident {

/// One Philox-4x32 block: four 32-bit words.
using PhiloxBlock = std::array<uint32_t, 4>;

/// Philox-4x32-10 (Salmon et al., SC'11, "Parallel random numbers: as easy as 1, 2, 3"):
/// a keyed bijection of a 128-bit counter, 10 rounds. The counter is (counter_hi,
/// counter_lo) as words {lo & 0xffffffff, lo >> 32, hi & 0xffffffff, hi >> 32}; the key
/// as {key & 0xffffffff, key >> 32}. Integer-only, so identical on every platform; it
/// reproduces Random123's published known-answer vectors.
inline PhiloxBlock philox4x32_10(uint64_t key, uint64_t counter_hi, uint64_t counter_lo) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t c0 = static_cast<uint32_t>(counter_lo), c1 = static_cast<uint32_t>(counter_lo >> 32);
  uint32_t c2 = static_cast<uint32_t>(counter_hi), c3 = static_cast<uint32_t>(counter_hi >> 32);
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {  // the key schedule bumps the key between rounds
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  return {c0, c1, c2, c3};
}

/// 64 random bits for (key, counter): the first two words of the Philox block of the
/// 128-bit counter (0, counter), low word first.
inline uint64_t random_u64(uint64_t key, uint64_t counter) {
  const PhiloxBlock b = philox4x32_10(key, 0, counter);
  return static_cast<uint64_t>(b[0]) | (static_cast<uint64_t>(b[1]) << 32);
}

/// 64 random bits for (key, a, b): the Philox block of the 128-bit counter (a, b).
/// Used to derive the key of a stream from two indices (e.g. step and sequence).
inline uint64_t random_u64(uint64_t key, uint64_t a, uint64_t b) {
  const PhiloxBlock block = philox4x32_10(key, a, b);
  return static_cast<uint64_t>(block[0]) | (static_cast<uint64_t>(block[1]) << 32);
}

/// The top 53 bits of `bits` as a double in [0, 1) (exact: every value is k / 2^53).
inline double bits_to_unit(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

/// A uniform double in [0, 1) for (key, counter).
inline double uniform_at(uint64_t key, uint64_t counter) {
  return bits_to_unit(random_u64(key, counter));
}

/// A standard normal double for (key, index), by Box–Muller from the whole Philox block
/// of counter (0, index): u1 from words 0-1 (mapped to (0, 1]), u2 from words 2-3,
/// z = sqrt(-2 ln u1) cos(2 pi u2). One normal per index, so the value at an index does
/// not depend on how many are drawn. The integer part is bit-exact everywhere; the
/// result is bit-exact for a given libm (log and cos may differ by an ulp across libms).
inline double normal_at(uint64_t key, uint64_t index) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  const PhiloxBlock b = philox4x32_10(key, 0, index);
  const uint64_t w01 = static_cast<uint64_t>(b[0]) | (static_cast<uint64_t>(b[1]) << 32);
  const uint64_t w23 = static_cast<uint64_t>(b[2]) | (static_cast<uint64_t>(b[3]) << 32);
  const double u1 = 1.0 - bits_to_unit(w01);  // (0, 1]: log(u1) is finite
  const double u2 = bits_to_unit(w23);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

/// Writes normal_at(key, first + k) to out[k] for k in [0, count): a shard fills its
/// slice of a tensor's elements without generating the others.
inline void fill_normal(uint64_t key, uint64_t first, int64_t count, double* out) {
  for (int64_t k = 0; k < count; ++k) out[k] = normal_at(key, first + static_cast<uint64_t>(k));
}

/// 64-bit FNV-1a of the bytes of `name`.
inline uint64_t fnv1a_64(const std::string& name) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV offset basis
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001B3ull;  // FNV prime
  }
  return h;
}

/// The key of the stream named `name` under `seed`: Philox keyed by the seed applied to
/// the FNV-1a hash of the name, so different names (and seeds) give unrelated streams.
inline uint64_t hash_name(uint64_t seed, const std::string& name) {
  return random_u64(seed, fnv1a_64(name));
}

}  // namespace trident
