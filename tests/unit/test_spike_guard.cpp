// The loss-spike guard's verdicts on made-up histories: a falling or noisy loss never fires,
// a jump above both thresholds does, non-finite values always count, and the marks of
// good checkpoints follow the last skip.
#include <gtest/gtest.h>

#include <cmath>  // std::exp, std::sin, NAN

#include "train/spike_guard.h"

namespace trident {
namespace {

GuardConfig defaults() { return GuardConfig{}; }

void feed(SpikeGuard& g, int64_t from, int64_t to, double (*loss)(int64_t), double norm = 1.0) {
  for (int64_t s = from; s <= to; ++s) g.record(s, g.judge(loss(s), norm), loss(s), norm);
}

TEST(SpikeGuard, a_falling_loss_never_fires) {
  SpikeGuard g(defaults());
  for (int64_t s = 1; s <= 200; ++s) {
    const double loss = 1.2 + 5.0 * std::exp(-0.03 * static_cast<double>(s));
    ASSERT_EQ(g.judge(loss, 1.0), StepVerdict::kHealthy) << "step " << s;
    g.record(s, StepVerdict::kHealthy, loss, 1.0);
  }
}

TEST(SpikeGuard, a_jump_above_ratio_and_deviations_is_a_spike) {
  SpikeGuard g(defaults());
  feed(g, 1, 20, [](int64_t s) { return 2.0 + 0.01 * static_cast<double>(s % 3); });
  EXPECT_EQ(g.judge(2.9, 1.0), StepVerdict::kHealthy);  // 1.45 x the median: below the ratio
  EXPECT_EQ(g.judge(3.2, 1.0), StepVerdict::kSpike);
  EXPECT_EQ(g.judge(2.0, 10.5), StepVerdict::kSpike);  // the gradient norm alone
  EXPECT_EQ(g.judge(2.0, 9.5), StepVerdict::kHealthy);
  EXPECT_NE(g.explain(3.2, 1.0).find("median of 2.01"), std::string::npos) << g.explain(3.2, 1.0);
}

TEST(SpikeGuard, a_noisy_loss_needs_more_than_the_ratio) {
  SpikeGuard g(defaults());
  // Loss 2 +- 0.5 (a sine sampled off its period): 3.4 is 1.7 x the median but under 6
  // deviations above it.
  feed(g, 1, 40, [](int64_t s) { return 2.0 + 0.5 * std::sin(1.7 * static_cast<double>(s)); });
  EXPECT_EQ(g.judge(3.4, 1.0), StepVerdict::kHealthy);
  EXPECT_EQ(g.judge(12.0, 1.0), StepVerdict::kSpike);
}

TEST(SpikeGuard, judges_only_after_min_history_and_always_non_finite) {
  SpikeGuard g(defaults());
  feed(g, 1, 7, [](int64_t) { return 2.0; });
  EXPECT_EQ(g.judge(100.0, 1.0), StepVerdict::kHealthy);  // 7 < min_history = 8
  EXPECT_EQ(g.judge(NAN, 1.0), StepVerdict::kNonFinite);
  GuardConfig off = defaults();
  off.enabled = false;
  SpikeGuard quiet(off);
  feed(quiet, 1, 20, [](int64_t) { return 2.0; });
  EXPECT_EQ(quiet.judge(100.0, 1.0), StepVerdict::kHealthy);
  EXPECT_EQ(quiet.judge(2.0, INFINITY), StepVerdict::kNonFinite);
}

TEST(SpikeGuard, checkpoints_after_a_skip_are_not_good_and_the_state_round_trips) {
  GuardConfig c = defaults();
  c.rollback_after = 2;
  SpikeGuard g(c);
  feed(g, 1, 10, [](int64_t) { return 2.0; });
  EXPECT_TRUE(g.calm(10));
  g.record(11, StepVerdict::kSpike, 9.0, 1.0);
  g.record(12, StepVerdict::kHealthy, 2.0, 1.0);
  EXPECT_FALSE(g.calm(12));  // one step after the skip
  EXPECT_TRUE(g.calm(13));
  TrainerProgress p;
  g.save_to(p, 12);
  EXPECT_FALSE(p.good);
  EXPECT_EQ(p.guard_last_skip, 11);
  EXPECT_EQ(p.guard_history.size(), 11u);  // the spike is not part of the window
  SpikeGuard back(c);
  back.restore_from(p);
  EXPECT_EQ(back.judge(3.2, 1.0), g.judge(3.2, 1.0));
  EXPECT_FALSE(back.calm(12));
}

}  // namespace
}  // namespace trident
