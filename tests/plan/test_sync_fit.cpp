// The fixed and the growing part of a collective's wait, from two calibrated blocks.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include "plan/sync_fit.h"  // fit_sync, SyncPoint

namespace trident::plan {
namespace {

TEST(SyncFit, the_line_through_two_blocks) {
  // 150 us of wait after 0.8 ms of compute, 1.3 ms after 8.5 ms (as calibrated here): the
  // slope 1.15 / 7.7, the intercept 150 us less the slope's share of 0.8 ms.
  const SyncPoint small{0.8e-3, 150e-6}, large{8.5e-3, 1300e-6};
  const SyncFit one = fit_sync(small, large, 1.0);
  EXPECT_NEAR(one.sync_fraction, 1.15 / 7.7, 1e-12);
  EXPECT_NEAR(one.sync_us, 150.0 - 800.0 * 1.15 / 7.7, 1e-9);
  // Two ranks a core: the others compute during the wait, the step loses half of it.
  const SyncFit two = fit_sync(small, large, 2.0);
  EXPECT_NEAR(two.sync_fraction, one.sync_fraction / 2, 1e-12);
  EXPECT_NEAR(two.sync_us, one.sync_us / 2, 1e-9);
}

TEST(SyncFit, never_negative) {
  // A steep line meets the axis below zero: no fixed wait, the slope kept.
  const SyncFit steep = fit_sync({1e-3, 50e-6}, {9e-3, 2050e-6}, 1.0);
  EXPECT_NEAR(steep.sync_fraction, 0.25, 1e-12);
  EXPECT_EQ(steep.sync_us, 0.0);
  // A falling line, or blocks whose compute came out the wrong way round: no fraction,
  // the small block's whole wait fixed.
  for (const SyncPoint& large : {SyncPoint{9e-3, 200e-6}, SyncPoint{0.5e-3, 900e-6}}) {
    const SyncFit flat = fit_sync({1e-3, 300e-6}, large, 1.0);
    EXPECT_EQ(flat.sync_fraction, 0.0);
    EXPECT_NEAR(flat.sync_us, 300.0, 1e-9);
  }
}

}  // namespace
}  // namespace trident::plan
