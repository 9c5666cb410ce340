// Calibration's measurement of how much of a gradient reduction hides behind backward:
// the reductions are polled from the weights' gradient hooks during the backward, as
// ZeroOptimizer polls them, and the hidden share comes from the three times.
#include <gtest/gtest.h>

#include <memory>  // std::make_shared

#include "parallel/local_communicator.h"  // LocalCommunicator
#include "plan/calibrate/overlap.h"       // overlap_timing, OverlapTiming

namespace trident::calibrate {
namespace {

/// How the polled communicator's reductions ended.
struct Endings {
  int launched = 0;
  int by_test = 0;  ///< on their third test, from a gradient hook
  int by_wait = 0;
};

/// A reduction that completes on its third test, or when waited on.
class SlowWork : public Work {
 public:
  explicit SlowWork(Endings& endings) : endings_(endings) { ++endings_.launched; }
  void wait() override {
    if (!done_) ++endings_.by_wait;
    done_ = true;
  }
  bool test() override {
    if (!done_ && ++tests_ == 3) {
      done_ = true;
      ++endings_.by_test;
    }
    return done_;
  }

 private:
  Endings& endings_;
  int tests_ = 0;
  bool done_ = false;
};

/// One rank whose reductions advance only when tested, as MPI's do on a CPU.
class PolledCommunicator : public LocalCommunicator {
 public:
  PolledCommunicator() : LocalCommunicator("dp", 0) {}
  WorkHandle all_reduce(at::Tensor, ReduceOp) override {
    return std::make_shared<SlowWork>(endings);
  }
  WorkHandle reduce_scatter(at::Tensor, at::Tensor, ReduceOp) override {
    return std::make_shared<SlowWork>(endings);
  }
  Endings endings;
};

TEST(CalibrateOverlap, the_backward_polls_the_reductions_in_flight) {
  for (const bool scatter : {false, true}) {
    PolledCommunicator dp;
    LocalCommunicator alone("alone", 0), world("world", 0);
    // A budget far below one call's time: each measurement is one warm-up call and five
    // trials of one call, so the reductions can be counted, whatever the machine's speed.
    const OverlapTiming t =
        overlap_timing(BlockShape{1, 8, 16, 2}, 2, 64, scatter, dp, alone, world, 1e-9);
    EXPECT_GT(t.block_s, 0);
    EXPECT_GT(t.reduce_s, 0);
    EXPECT_GT(t.both_s, 0);
    const char* what = scatter ? "reduce-scatter" : "all-reduce";
    // Sized on six reductions of one bucket alone; then six calls of t.buckets alone, and
    // six beside the backward.
    ASSERT_GE(t.buckets, 1) << what;
    ASSERT_LE(t.buckets, 2) << what;
    EXPECT_EQ(dp.endings.launched, 6 + 12 * t.buckets) << what;
    // Alone, every reduction ends in its wait; beside the block, the gradient hooks test
    // them often enough (a small GPT-2 block has 12 weights) to finish every one.
    EXPECT_EQ(dp.endings.by_wait, 6 + 6 * t.buckets) << what;
    EXPECT_EQ(dp.endings.by_test, 6 * t.buckets) << what;
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
