// The Feistel permutation of window indices; its round function is Philox.
#include "data/window_permutation.h"

#include "common/counter_rng.h"  // random_u64, hash_name
#include "data/data_error.h"     // DataError

namespace trident::data {
namespace {

// Four rounds make a Feistel network a pseudo-random permutation (Luby-Rackoff); the
// bijection itself holds for any count.
constexpr int kRounds = 4;

/// One pass of the network over 2 * half bits.
uint64_t feistel(uint64_t key, uint64_t x, int half) {
  const uint64_t mask = half == 32 ? 0xFFFFFFFFull : (uint64_t{1} << half) - 1;
  uint64_t left = x >> half, right = x & mask;
  for (int round = 0; round < kRounds; ++round) {
    const uint64_t next = left ^ (random_u64(key, static_cast<uint64_t>(round), right) & mask);
    left = right;
    right = next;
  }
  return (left << half) | right;
}

}  // namespace

uint64_t permute_window(uint64_t key, uint64_t position, uint64_t count) {
  if (position >= count)
    throw DataError("permute_window: position " + std::to_string(position) + " is not below " +
                    std::to_string(count));
  if (count == 1) return 0;
  int half = 1;  // the smallest even width 2 * half with 2^(2 * half) >= count
  while (half < 32 && (uint64_t{1} << (2 * half)) < count) ++half;
  // Cycle-walking: the network permutes [0, 4^half); following x's cycle until it is back
  // below count restricts that permutation to [0, count), and takes under 4 passes on average.
  uint64_t x = position;
  do {
    x = feistel(key, x, half);
  } while (x >= count);
  return x;
}

uint64_t epoch_key(uint64_t seed, const std::string& name, int64_t epoch) {
  return random_u64(hash_name(seed, "data.epoch." + name), static_cast<uint64_t>(epoch));
}

}  // namespace trident::data
