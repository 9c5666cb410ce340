// Tests of the keyed window permutation: a bijection of [0, W) for every W and key, a
// different order for each epoch and source, and no trace of the identity.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <algorithm>  // std::sort
#include <cmath>      // std::abs
#include <cstdint>    // uint64_t
#include <numeric>    // std::iota
#include <vector>     // std::vector

#include "data/window_permutation.h"  // permute_window, epoch_key

namespace trident::data {
namespace {

std::vector<uint64_t> order(uint64_t key, uint64_t count) {
  std::vector<uint64_t> out;
  for (uint64_t q = 0; q < count; ++q) out.push_back(permute_window(key, q, count));
  return out;
}

TEST(WindowPermutation, is_a_bijection_of_every_range) {
  for (const uint64_t count : {1, 2, 3, 4, 5, 7, 16, 17, 1000, 4096, 4097}) {
    for (const uint64_t seed : {0, 1234}) {
      std::vector<uint64_t> seen = order(epoch_key(seed, "web", 3), count);
      std::sort(seen.begin(), seen.end());
      std::vector<uint64_t> all(count);
      std::iota(all.begin(), all.end(), uint64_t{0});
      EXPECT_EQ(seen, all) << "count " << count << ", seed " << seed;
    }
  }
}

TEST(WindowPermutation, each_epoch_and_source_has_its_own_order) {
  const uint64_t count = 1000;
  const std::vector<uint64_t> e0 = order(epoch_key(1234, "web", 0), count);
  const std::vector<uint64_t> e1 = order(epoch_key(1234, "web", 1), count);
  const std::vector<uint64_t> code = order(epoch_key(1234, "code", 0), count);
  const std::vector<uint64_t> seed = order(epoch_key(99, "web", 0), count);
  for (const std::vector<uint64_t>* other : {&e1, &code, &seed}) {
    int same = 0;
    for (uint64_t q = 0; q < count; ++q) same += e0[q] == (*other)[q];
    EXPECT_LT(same, 10) << "a random pair of orders agrees in about 1 place of 1000";
  }
  // Far from the identity: the mean displacement of a random permutation is W / 3.
  double displacement = 0;
  int fixed = 0;
  for (uint64_t q = 0; q < count; ++q) {
    displacement += std::abs(static_cast<double>(e0[q]) - static_cast<double>(q));
    fixed += e0[q] == q;
  }
  EXPECT_NEAR(displacement / count, count / 3.0, 40.0);
  EXPECT_LT(fixed, 10);
  // The same key gives the same order: nothing is stored between calls.
  EXPECT_EQ(order(epoch_key(1234, "web", 0), count), e0);
}

TEST(WindowPermutation, large_ranges_stay_in_range) {
  const uint64_t count = (uint64_t{1} << 40) + 12345;
  for (uint64_t q : {uint64_t{0}, uint64_t{1}, count / 2, count - 1})
    EXPECT_LT(permute_window(epoch_key(7, "big", 0), q, count), count);
}

}  // namespace
}  // namespace trident::data
