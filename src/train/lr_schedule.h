// Learning rate of each optimizer step, a pure function of (step, train.steps, the
// optimizer's schedule keys): linear warm-up, then cosine, linear, WSD, constant or
// inverse-sqrt (a run stopped early with train.stop_at keeps the same curve).
#pragma once
#include <cstdint>

#include "config/choices.h"  // LrScheduleKind, DecayShape

namespace trident {

struct OptimizerConfig;

struct LrSchedule {
  double lr = 1e-3;
  double min_lr = 1e-4;
  int64_t warmup_steps = 10;
  int64_t total_steps = 100;
  LrScheduleKind kind = LrScheduleKind::kCosine;
  double decay_fraction = 0.2;  // wsd
  DecayShape decay_shape = DecayShape::kOneMinusSqrt;

  /// The rate of update number `step` (1-based): lr * step / warmup during warm-up, then
  ///   cosine:       min_lr + (lr - min_lr) * (1 + cos(pi * p)) / 2, p = progress after warm-up
  ///   linear:       min_lr + (lr - min_lr) * (1 - p)
  ///   wsd:          lr until the last decay_steps() steps, then min_lr + (lr - min_lr) *
  ///                 shape(q), q = progress through those steps
  ///   constant:     lr
  ///   inverse_sqrt: max(min_lr, lr * sqrt(warmup / step)) (warmup 0 counts as 1).
  double at(int64_t step) const;

  /// wsd: the steps of the final decay, round(decay_fraction * total_steps), at most the
  /// steps after the warm-up.
  int64_t decay_steps() const;
};

/// The schedule the optimizer section describes for a run of `total_steps` steps.
LrSchedule lr_schedule_of(const OptimizerConfig& optimizer, int64_t total_steps);

}  // namespace trident
