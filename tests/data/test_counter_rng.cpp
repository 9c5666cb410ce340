// Tests of the counter-based generator: Philox known answers, the moments of the
// uniform and normal values, and independence from how many values are drawn.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <algorithm>  // std::min, std::max
#include <cmath>      // std::sqrt, std::abs
#include <vector>     // std::vector

#include "common/counter_rng.h"  // philox4x32_10, random_u64, uniform_at, normal_at, ...

namespace trident::data {
namespace {

uint64_t join(uint32_t lo, uint32_t hi) { return lo | (static_cast<uint64_t>(hi) << 32); }

TEST(CounterRng, philox_matches_random123_known_answers) {
  EXPECT_EQ(philox4x32_10(0, 0, 0), (PhiloxBlock{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10(~0ull, ~0ull, ~0ull),
            (PhiloxBlock{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  // Counter words {243f6a88, 85a308d3, 13198a2e, 03707344}, key {a4093822, 299f31d0}.
  EXPECT_EQ(philox4x32_10(join(0xa4093822, 0x299f31d0), join(0x13198a2e, 0x03707344),
                          join(0x243f6a88, 0x85a308d3)),
            (PhiloxBlock{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
  EXPECT_EQ(random_u64(0, 0), 0xe169c58d6627e8d5ull);
  EXPECT_EQ(random_u64(5, 0, 9), random_u64(5, 9));
}

TEST(CounterRng, hash_name_separates_names_and_seeds) {
  EXPECT_EQ(fnv1a_64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a_64("a"), 0xaf63dc4c8601ec8cull);  // published FNV-1a 64 test value
  const uint64_t k = hash_name(1, "layers.0.attn.qkv.weight");
  EXPECT_EQ(k, hash_name(1, "layers.0.attn.qkv.weight"));
  EXPECT_NE(k, hash_name(2, "layers.0.attn.qkv.weight"));
  EXPECT_NE(k, hash_name(1, "layers.1.attn.qkv.weight"));
  EXPECT_EQ(k, random_u64(1, fnv1a_64("layers.0.attn.qkv.weight")));
}

TEST(CounterRng, uniform_has_moments_of_u01) {
  const int n = 1000000;
  double sum = 0, sum2 = 0, lo = 1, hi = 0;
  for (int i = 0; i < n; ++i) {
    const double u = uniform_at(42, static_cast<uint64_t>(i));
    sum += u;
    sum2 += u * u;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  const double mean = sum / n, var = sum2 / n - mean * mean;
  EXPECT_GE(lo, 0.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_NEAR(mean, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(var, 1.0 / 12, 5 * std::sqrt(1.0 / 180 / n));  // SE of a U(0,1) sample variance
}

TEST(CounterRng, normal_has_mean_zero_variance_one_over_million_draws) {
  const int n = 1000000;
  const uint64_t key = hash_name(1234, "test.normal");
  double sum = 0, sum2 = 0, sum4 = 0, lag = 0, prev = 0;
  int beyond2 = 0;
  for (int i = 0; i < n; ++i) {
    const double z = normal_at(key, static_cast<uint64_t>(i));
    sum += z;
    sum2 += z * z;
    sum4 += z * z * z * z;
    lag += z * prev;
    prev = z;
    beyond2 += std::abs(z) > 2.0;
  }
  const double mean = sum / n, var = sum2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 5 / std::sqrt(n));             // SE 0.001
  EXPECT_NEAR(var, 1.0, 5 * std::sqrt(2.0 / n));        // SE 0.0014
  EXPECT_NEAR(sum4 / n, 3.0, 5 * std::sqrt(96.0 / n));  // fourth moment of N(0,1)
  EXPECT_NEAR(lag / n, 0.0, 5 / std::sqrt(n));          // neighbours uncorrelated
  const double p2 = 0.045500263896358;                  // P(|Z| > 2)
  EXPECT_NEAR(static_cast<double>(beyond2) / n, p2, 5 * std::sqrt(p2 * (1 - p2) / n));
}

TEST(CounterRng, values_do_not_depend_on_how_many_are_drawn) {
  const uint64_t key = hash_name(7, "wte.weight");
  std::vector<double> all(1000), slice(100), one(1);
  fill_normal(key, 0, 1000, all.data());
  fill_normal(key, 500, 100, slice.data());
  for (int k = 0; k < 100; ++k) EXPECT_EQ(slice[k], all[500 + k]);
  for (int i = 999; i >= 0; i -= 37) {  // any order, one at a time
    fill_normal(key, static_cast<uint64_t>(i), 1, one.data());
    EXPECT_EQ(one[0], all[i]);
    EXPECT_EQ(normal_at(key, static_cast<uint64_t>(i)), all[i]);
  }
  EXPECT_NE(normal_at(key, 0), normal_at(key + 1, 0));
}

}  // namespace
}  // namespace trident::data
