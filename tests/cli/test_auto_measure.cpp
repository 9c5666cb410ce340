// The order `train --auto --measure K` trains its candidates in: every candidate once a
// pass, the passes alternating, so that no candidate always comes first in the process.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <algorithm>  // std::count
#include <vector>     // std::vector

#include "cli/auto_measure.h"  // measure_order, kMeasurePasses

namespace trident::cli {
namespace {

TEST(AutoMeasure, passes_alternate_the_order_of_the_candidates) {
  ASSERT_EQ(kMeasurePasses, 2);
  EXPECT_EQ(measure_order(3), (std::vector<size_t>{0, 1, 2, 2, 1, 0}));
  EXPECT_EQ(measure_order(1), (std::vector<size_t>{0, 0}));
  EXPECT_TRUE(measure_order(0).empty());
}

TEST(AutoMeasure, each_candidate_trains_once_a_pass_in_places_that_sum_the_same) {
  for (size_t k = 2; k <= 4; ++k) {
    const std::vector<size_t> order = measure_order(k);
    ASSERT_EQ(order.size(), k * static_cast<size_t>(kMeasurePasses));
    for (size_t i = 0; i < k; ++i)
      EXPECT_EQ(std::count(order.begin(), order.end(), i), kMeasurePasses) << k << " " << i;
    // Its places summed over the passes are the same for every candidate.
    std::vector<size_t> place_sum(k, 0);
    for (size_t n = 0; n < order.size(); ++n) place_sum[order[n]] += n % k;
    for (size_t i = 1; i < k; ++i) EXPECT_EQ(place_sum[i], place_sum[0]) << k << " " << i;
  }
}

}  // namespace
}  // namespace trident::cli
