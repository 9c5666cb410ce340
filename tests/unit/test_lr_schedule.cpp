// The learning-rate schedules against values worked out by hand: warm-up, cosine, linear,
// WSD with each decay shape and its rounding, constant and inverse-sqrt; a WSD run
// stretched to more steps agrees with the shorter one through the shorter's stable phase.
#include <gtest/gtest.h>

#include <cmath>

#include "config/config.h"      // OptimizerConfig
#include "train/lr_schedule.h"  // LrSchedule, lr_schedule_of

namespace trident {
namespace {

constexpr double kTol = 1e-15;

/// lr 1, min_lr 0.1, two warm-up steps, twelve steps in all.
LrSchedule schedule(LrScheduleKind kind, DecayShape shape = DecayShape::kLinear,
                    double decay_fraction = 0.25) {
  LrSchedule s;
  s.lr = 1.0;
  s.min_lr = 0.1;
  s.warmup_steps = 2;
  s.total_steps = 12;
  s.kind = kind;
  s.decay_shape = shape;
  s.decay_fraction = decay_fraction;
  return s;
}

TEST(LrSchedule, every_kind_warms_up_linearly) {
  for (LrScheduleKind kind :
       {LrScheduleKind::kCosine, LrScheduleKind::kLinear, LrScheduleKind::kWsd,
        LrScheduleKind::kConstant, LrScheduleKind::kInverseSqrt}) {
    EXPECT_EQ(schedule(kind).at(1), 0.5) << name_of(kind);
    EXPECT_EQ(schedule(kind).at(2), 1.0) << name_of(kind);
  }
}

TEST(LrSchedule, cosine_and_linear_decay_over_the_steps_after_warmup) {
  const LrSchedule cosine = schedule(LrScheduleKind::kCosine);
  // Progress (step - 2) / 10: 0.2 at step 4, 0.5 at step 7, 1 at step 12.
  EXPECT_NEAR(cosine.at(4), 0.1 + 0.9 * (1 + 0.80901699437494742) / 2, kTol);
  EXPECT_NEAR(cosine.at(7), 0.55, kTol);
  EXPECT_NEAR(cosine.at(12), 0.1, kTol);
  EXPECT_NEAR(cosine.at(20), 0.1, kTol);  // past the end it stays at min_lr
  const LrSchedule linear = schedule(LrScheduleKind::kLinear);
  EXPECT_NEAR(linear.at(4), 0.82, kTol);
  EXPECT_NEAR(linear.at(7), 0.55, kTol);
  EXPECT_NEAR(linear.at(12), 0.1, kTol);
}

TEST(LrSchedule, the_default_is_the_cosine_it_always_was) {
  const OptimizerConfig defaults;
  const LrSchedule s = lr_schedule_of(defaults, 100);
  EXPECT_EQ(s.kind, LrScheduleKind::kCosine);
  for (int64_t step = 1; step <= 110; ++step) {
    double want = defaults.lr * static_cast<double>(step) / 10.0;
    if (step > 10) {
      const double progress = std::min(1.0, static_cast<double>(step - 10) / 90.0);
      want = defaults.min_lr +
             (defaults.lr - defaults.min_lr) * 0.5 * (1.0 + std::cos(M_PI * progress));
    }
    EXPECT_EQ(s.at(step), want) << "step " << step;
  }
}

TEST(LrSchedule, wsd_holds_lr_then_decays_in_each_shape) {
  // decay_fraction 0.25 of 12 steps: the last 3 decay, steps 3..9 hold lr.
  EXPECT_EQ(schedule(LrScheduleKind::kWsd).decay_steps(), 3);
  for (DecayShape shape : {DecayShape::kLinear, DecayShape::kCosine, DecayShape::kOneMinusSqrt}) {
    const LrSchedule s = schedule(LrScheduleKind::kWsd, shape);
    for (int64_t step = 3; step <= 9; ++step) EXPECT_EQ(s.at(step), 1.0) << name_of(shape);
    EXPECT_NEAR(s.at(12), 0.1, kTol) << name_of(shape);
  }
  // Progress through the decay: 1/3 at step 10, 2/3 at step 11.
  const LrSchedule linear = schedule(LrScheduleKind::kWsd, DecayShape::kLinear);
  EXPECT_NEAR(linear.at(10), 0.7, kTol);
  EXPECT_NEAR(linear.at(11), 0.4, kTol);
  const LrSchedule cosine = schedule(LrScheduleKind::kWsd, DecayShape::kCosine);
  EXPECT_NEAR(cosine.at(10), 0.1 + 0.9 * 0.75, kTol);  // (1 + cos(pi/3)) / 2
  EXPECT_NEAR(cosine.at(11), 0.1 + 0.9 * 0.25, kTol);  // (1 + cos(2pi/3)) / 2
  const LrSchedule root = schedule(LrScheduleKind::kWsd, DecayShape::kOneMinusSqrt);
  EXPECT_NEAR(root.at(10), 0.1 + 0.9 * (1 - 0.57735026918962576), kTol);  // 1 - sqrt(1/3)
  EXPECT_NEAR(root.at(11), 0.1 + 0.9 * (1 - 0.81649658092772603), kTol);  // 1 - sqrt(2/3)
}

TEST(LrSchedule, wsd_rounds_its_decay_and_keeps_out_of_the_warmup) {
  EXPECT_EQ(schedule(LrScheduleKind::kWsd, DecayShape::kLinear, 0.2).decay_steps(), 2);  // 2.4
  EXPECT_EQ(schedule(LrScheduleKind::kWsd, DecayShape::kLinear, 0.3).decay_steps(), 4);  // 3.6
  // All of the steps: the decay starts where the warm-up ends, as the linear schedule does.
  const LrSchedule whole = schedule(LrScheduleKind::kWsd, DecayShape::kLinear, 1.0);
  EXPECT_EQ(whole.decay_steps(), 10);
  const LrSchedule linear = schedule(LrScheduleKind::kLinear);
  for (int64_t step = 1; step <= 12; ++step) EXPECT_NEAR(whole.at(step), linear.at(step), kTol);
  // None: lr to the end.
  const LrSchedule none = schedule(LrScheduleKind::kWsd, DecayShape::kLinear, 0.0);
  EXPECT_EQ(none.decay_steps(), 0);
  EXPECT_EQ(none.at(12), 1.0);
}

TEST(LrSchedule, constant_and_inverse_sqrt) {
  const LrSchedule constant = schedule(LrScheduleKind::kConstant);
  EXPECT_EQ(constant.at(3), 1.0);
  EXPECT_EQ(constant.at(12), 1.0);
  const LrSchedule inverse = schedule(LrScheduleKind::kInverseSqrt);
  EXPECT_NEAR(inverse.at(8), 0.5, kTol);   // sqrt(2 / 8)
  EXPECT_NEAR(inverse.at(50), 0.2, kTol);  // sqrt(2 / 50)
  EXPECT_EQ(inverse.at(800), 0.1);         // sqrt(2 / 800) = 0.05, floored at min_lr
  LrSchedule no_warmup = inverse;
  no_warmup.warmup_steps = 0;
  EXPECT_EQ(no_warmup.at(1), 1.0);
  EXPECT_NEAR(no_warmup.at(4), 0.5, kTol);  // sqrt(1 / 4)
  // Neither depends on the run's length.
  LrSchedule longer = inverse;
  longer.total_steps = 1000;
  EXPECT_EQ(longer.at(50), inverse.at(50));
}

TEST(LrSchedule, a_stretched_wsd_agrees_through_the_stable_phase) {
  OptimizerConfig o;
  o.schedule = LrScheduleKind::kWsd;
  o.warmup_steps = 5;
  const LrSchedule short_run = lr_schedule_of(o, 30), long_run = lr_schedule_of(o, 40);
  // decay_fraction 0.2: the 30-step run decays after step 24, the 40-step one after 32.
  for (int64_t step = 1; step <= 24; ++step)
    EXPECT_EQ(short_run.at(step), long_run.at(step)) << "step " << step;
  EXPECT_LT(short_run.at(25), long_run.at(25));
  EXPECT_EQ(long_run.at(32), o.lr);
  EXPECT_NEAR(long_run.at(40), o.min_lr, kTol);
}

}  // namespace
}  // namespace trident
