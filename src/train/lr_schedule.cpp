// Warm-up and the decay shapes.
#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "config/config.h"  // OptimizerConfig

namespace trident {

namespace {

/// The share of (lr - min_lr) left at progress p in [0, 1] of a decay of `shape`.
double remaining(DecayShape shape, double p) {
  switch (shape) {
    case DecayShape::kLinear:
      return 1.0 - p;
    case DecayShape::kCosine:
      return 0.5 * (1.0 + std::cos(M_PI * p));
    case DecayShape::kOneMinusSqrt:
      return 1.0 - std::sqrt(p);
  }
  return 1.0 - p;
}

}  // namespace

int64_t LrSchedule::decay_steps() const {
  const int64_t after_warmup = std::max<int64_t>(0, total_steps - warmup_steps);
  const auto wanted = static_cast<int64_t>(std::llround(decay_fraction * total_steps));
  return std::clamp<int64_t>(wanted, 0, after_warmup);
}

double LrSchedule::at(int64_t step) const {
  if (warmup_steps > 0 && step <= warmup_steps)
    return lr * static_cast<double>(step) / static_cast<double>(warmup_steps);
  switch (kind) {
    case LrScheduleKind::kConstant:
      return lr;
    case LrScheduleKind::kInverseSqrt: {
      const double warmup = static_cast<double>(std::max<int64_t>(1, warmup_steps));
      return std::max(min_lr, lr * std::sqrt(warmup / static_cast<double>(step)));
    }
    case LrScheduleKind::kWsd: {
      const int64_t decay = decay_steps();
      const int64_t start = total_steps - decay;  // the last step at lr
      if (step <= start) return lr;
      const double q =
          std::min(1.0, static_cast<double>(step - start) / static_cast<double>(decay));
      return min_lr + (lr - min_lr) * remaining(decay_shape, q);
    }
    case LrScheduleKind::kCosine:
    case LrScheduleKind::kLinear:
      break;
  }
  const int64_t decay_steps = std::max<int64_t>(1, total_steps - warmup_steps);
  const double progress =
      std::min(1.0, static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps));
  const DecayShape shape =
      kind == LrScheduleKind::kLinear ? DecayShape::kLinear : DecayShape::kCosine;
  return min_lr + (lr - min_lr) * remaining(shape, progress);
}

LrSchedule lr_schedule_of(const OptimizerConfig& optimizer, int64_t total_steps) {
  LrSchedule s;
  s.lr = optimizer.lr;
  s.min_lr = optimizer.min_lr;
  s.warmup_steps = optimizer.warmup_steps;
  s.total_steps = total_steps;
  s.kind = optimizer.schedule;
  s.decay_fraction = optimizer.decay_fraction;
  s.decay_shape = optimizer.decay_shape;
  return s;
}

}  // namespace trident
