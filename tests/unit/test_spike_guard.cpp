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
  for (int64_t s = from; s <= to; ++s) g.record(s, g.judge(loss(s), norm).verdict, loss(s), norm);
}

TEST(SpikeGuard, a_falling_loss_never_fires) {
  SpikeGuard g(defaults(), false, 0);
  for (int64_t s = 1; s <= 200; ++s) {
    const double loss = 1.2 + 5.0 * std::exp(-0.03 * static_cast<double>(s));
    ASSERT_EQ(g.judge(loss, 1.0).verdict, StepVerdict::kHealthy) << "step " << s;
    g.record(s, StepVerdict::kHealthy, loss, 1.0);
  }
}

TEST(SpikeGuard, a_jump_above_ratio_and_deviations_is_a_spike) {
  SpikeGuard g(defaults(), false, 0);
  feed(g, 1, 20, [](int64_t s) { return 2.0 + 0.01 * static_cast<double>(s % 3); });
  EXPECT_EQ(g.judge(2.9, 1.0).verdict,
            StepVerdict::kHealthy);  // 1.45 x the median: below the ratio
  EXPECT_EQ(g.judge(3.2, 1.0).verdict, StepVerdict::kSpike);
  EXPECT_EQ(g.judge(2.0, 10.5).verdict, StepVerdict::kSpike);  // the gradient norm alone
  EXPECT_EQ(g.judge(2.0, 9.5).verdict, StepVerdict::kHealthy);
  const std::string why = g.judge(3.2, 1.0).reason;
  EXPECT_EQ(why.rfind("loss 3.2 above", 0), 0u) << why;  // names the quantity first
  EXPECT_NE(why.find("median of 2.01"), std::string::npos) << why;
  EXPECT_EQ(g.judge(2.0, 10.5).reason.rfind("gradient norm 10.5 above", 0), 0u);
}

TEST(SpikeGuard, a_noisy_loss_needs_more_than_the_ratio) {
  SpikeGuard g(defaults(), false, 0);
  // Loss 2 +- 0.5 (a sine sampled off its period): 3.4 is 1.7 x the median but under 6
  // deviations above it.
  feed(g, 1, 40, [](int64_t s) { return 2.0 + 0.5 * std::sin(1.7 * static_cast<double>(s)); });
  EXPECT_EQ(g.judge(3.4, 1.0).verdict, StepVerdict::kHealthy);
  EXPECT_EQ(g.judge(12.0, 1.0).verdict, StepVerdict::kSpike);
}

TEST(SpikeGuard, judges_only_after_min_history_and_always_non_finite) {
  SpikeGuard g(defaults(), false, 0);
  feed(g, 1, 7, [](int64_t) { return 2.0; });
  EXPECT_EQ(g.judge(100.0, 1.0).verdict, StepVerdict::kHealthy);  // 7 < min_history = 8
  EXPECT_EQ(g.judge(NAN, 1.0).verdict, StepVerdict::kNonFinite);
  GuardConfig off = defaults();
  off.enabled = false;
  SpikeGuard quiet(off, false, 0);
  feed(quiet, 1, 20, [](int64_t) { return 2.0; });
  EXPECT_EQ(quiet.judge(100.0, 1.0).verdict, StepVerdict::kHealthy);
  EXPECT_EQ(quiet.judge(2.0, INFINITY).verdict, StepVerdict::kNonFinite);
}

TEST(SpikeGuard, checkpoints_after_a_skip_are_not_good_and_the_state_round_trips) {
  GuardConfig c = defaults();
  c.rollback_after = 2;
  SpikeGuard g(c, false, 0);
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
  SpikeGuard back(c, false, 0);
  back.restore_from(p);
  EXPECT_EQ(back.judge(3.2, 1.0).verdict, g.judge(3.2, 1.0).verdict);
  EXPECT_FALSE(back.calm(12));
}

// The pattern of a real-text run's first steps (docs/real-data.md's walk-through, warm-up
// of 20 steps): the loss falls from 5.6 to 4.0 while the gradient norm rises from about 2
// to 95, ordinary early on and harmless under grad_clip = 1. The guard skips none of it:
// within the warm-up it judges nothing, and after it, under clipping, the jump is a warning.
const double kRealTextLosses[] = {5.60, 5.52, 5.41, 5.33, 5.22, 5.10, 5.02, 4.95, 4.88, 4.82,
                                  4.71, 4.60, 4.48, 4.40, 4.27, 4.15, 4.02, 3.98, 3.95, 3.90};
const double kRealTextNorms[] = {2.1, 1.9, 2.0, 2.2, 1.8, 2.0,  2.1,  1.9,  2.3,  2.0,
                                 2.4, 2.8, 3.5, 5.0, 9.0, 20.0, 41.0, 70.0, 95.0, 60.0};

TEST(SpikeGuard, a_healthy_real_text_start_is_not_skipped) {
  struct Case {
    bool clipped;
    int64_t warmup;
  };
  for (const Case c : {Case{true, 20}, Case{false, 20}, Case{true, 0}}) {
    SpikeGuard g(defaults(), c.clipped, c.warmup);
    int warnings = 0;
    for (int64_t s = 1; s <= 20; ++s) {
      const GuardJudgement j = g.judge(kRealTextLosses[s - 1], kRealTextNorms[s - 1]);
      EXPECT_EQ(j.verdict, StepVerdict::kHealthy) << "step " << s << ": " << j.reason;
      warnings += !j.warning.empty();
      g.record(s, j.verdict, kRealTextLosses[s - 1], kRealTextNorms[s - 1]);
    }
    EXPECT_EQ(g.settled(), c.warmup == 0);
    // Judged (no warm-up), the jump from step 17 on is named as a warning.
    EXPECT_EQ(warnings > 0, c.warmup == 0) << warnings;
  }
  // Without clipping and without a warm-up the same jump is a spike: the update would
  // follow the gradient norm.
  SpikeGuard unclipped(defaults(), false, 0);
  int64_t first_skip = 0;
  for (int64_t s = 1; s <= 20 && first_skip == 0; ++s) {
    const GuardJudgement j = unclipped.judge(kRealTextLosses[s - 1], kRealTextNorms[s - 1]);
    if (j.verdict == StepVerdict::kSpike) first_skip = s;
    unclipped.record(s, j.verdict, kRealTextLosses[s - 1], kRealTextNorms[s - 1]);
  }
  EXPECT_EQ(first_skip, 17);
}

TEST(SpikeGuard, under_clipping_a_gradient_norm_jump_alone_is_a_warning) {
  SpikeGuard clipped(defaults(), true, 0), unclipped(defaults(), false, 0);
  for (SpikeGuard* g : {&clipped, &unclipped})
    feed(*g, 1, 20, [](int64_t s) { return 2.0 + 0.01 * static_cast<double>(s % 3); });
  ASSERT_TRUE(clipped.settled());
  const GuardJudgement warned = clipped.judge(2.0, 40.0);
  EXPECT_EQ(warned.verdict, StepVerdict::kHealthy);
  EXPECT_EQ(warned.warning.rfind("gradient norm 40 above", 0), 0u) << warned.warning;
  EXPECT_EQ(unclipped.judge(2.0, 40.0).verdict, StepVerdict::kSpike);
  // A loss spike is skipped whether or not the update is clipped.
  EXPECT_EQ(clipped.judge(3.2, 40.0).verdict, StepVerdict::kSpike);
  EXPECT_EQ(clipped.judge(3.2, 40.0).reason.rfind("loss 3.2", 0), 0u);
}

TEST(SpikeGuard, only_rises_count_and_the_warm_up_is_not_judged) {
  SpikeGuard g(defaults(), false, 0);
  feed(g, 1, 20, [](int64_t s) { return 2.0 + 0.01 * static_cast<double>(s % 3); });
  EXPECT_EQ(g.judge(0.1, 1.0).verdict, StepVerdict::kHealthy);  // far below the median
  // A warm-up of 10 steps: steps 1-10 do not count towards min_history = 8.
  SpikeGuard warming(defaults(), false, 10);
  feed(warming, 1, 17, [](int64_t) { return 2.0; });
  EXPECT_FALSE(warming.settled());
  EXPECT_EQ(warming.judge(100.0, 1.0).verdict, StepVerdict::kHealthy);
  feed(warming, 18, 18, [](int64_t) { return 2.0; });
  EXPECT_TRUE(warming.settled());
  EXPECT_EQ(warming.judge(100.0, 1.0).verdict, StepVerdict::kSpike);
}

}  // namespace
}  // namespace trident
