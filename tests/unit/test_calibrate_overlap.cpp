// Calibration's measurement of how much of a gradient reduction hides behind backward:
// the reductions are polled from the weights' gradient hooks during the backward, as
// ZeroOptimizer polls them, and the hidden share comes from the three times.
#include <gtest/gtest.h>

#include <memory>  // std::make_shared

#include "parallel/local_communicator.h"  // LocalCommunicator
#include "plan/calibrate/overlap.h"       // overlap_timing, OverlapTiming
#include "plan/calibrate/timing.h"        // Clock

namespace trident::calibrate {
namespace {

/// A reduction that completes on its third test, or when waited on.
class SlowWork : public Work {
 public:
  explicit SlowWork(int& finished_by_test) : finished_by_test_(finished_by_test) {}
  void wait() override { done_ = true; }
  bool test() override {
    if (!done_ && ++tests_ == 3) {
      done_ = true;
      ++finished_by_test_;
    }
    return done_;
  }

 private:
  int& finished_by_test_;
  int tests_ = 0;
  bool done_ = false;
};

/// One rank whose reductions advance only when tested, as MPI's do on a CPU.
class PolledCommunicator : public LocalCommunicator {
 public:
  PolledCommunicator() : LocalCommunicator("dp", 0) {}
  WorkHandle all_reduce(at::Tensor, ReduceOp) override {
    return std::make_shared<SlowWork>(finished_by_test);
  }
  WorkHandle reduce_scatter(at::Tensor, at::Tensor, ReduceOp) override {
    return std::make_shared<SlowWork>(finished_by_test);
  }
  int finished_by_test = 0;
};

TEST(CalibrateOverlap, the_backward_polls_the_reductions_in_flight) {
  for (const bool scatter : {false, true}) {
    PolledCommunicator dp;
    LocalCommunicator alone("alone", 0), world("world", 0);
    // A test clock a tick of 1/1024 s on every reading, so that each trial makes a known
    // number of calls: sizing, one call a trial, block and bucket alike (2 buckets, the
    // most asked for); then with a budget of 20 ticks, a trial of the block or of both
    // reads 4 ticks after 1 + 2 + 4 + 8 = 15 calls, one of the reduction 2 after 3.
    constexpr double kTick = 1.0 / 1024;
    double now = 0;
    const Clock clock{[&now] { return now += kTick; }};
    const OverlapTiming t = overlap_timing(BlockShape{1, 8, 16, 2}, 2, 64, scatter, dp, alone,
                                           world, 20 * kTick, clock);
    EXPECT_EQ(t.buckets, 2);
    EXPECT_EQ(t.block_s, 4 * kTick / 15);
    EXPECT_EQ(t.reduce_s, 2 * kTick / 3);
    EXPECT_EQ(t.both_s, 4 * kTick / 15);
    // Alone, every reduction ends in its wait; beside the block, the gradient hooks (a
    // small GPT-2 block has 12 weights) test them often enough to finish both buckets of
    // each of the 1 + 5 x 15 calls, none left to the wait.
    EXPECT_EQ(dp.finished_by_test, 2 * 76) << (scatter ? "reduce-scatter" : "all-reduce");
  }
}

TEST(CalibrateOverlap, the_hidden_share_of_the_reduction_or_of_the_backward) {
  // 10 ms of reduction beside 90 ms of block (60 of backward): 2 ms showed, 8 hid.
  EXPECT_NEAR((OverlapTiming{0.090, 0.010, 0.092}.overlap()), 0.8, 1e-12);
  // A reduction longer than the backward can hide at most the backward: 30 ms of block,
  // 40 of reduction, 50 together: 20 ms hid, all that the 20 ms of backward could.
  EXPECT_DOUBLE_EQ((OverlapTiming{0.030, 0.040, 0.050}.overlap()), 1.0);
  // Together slower than one after the other (the copies took the cores, and the ranks
  // drifted apart): nothing hid.
  EXPECT_DOUBLE_EQ((OverlapTiming{0.090, 0.010, 0.105}.overlap()), 0.0);
}

}  // namespace
}  // namespace trident::calibrate
