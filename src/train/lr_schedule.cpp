// Warm-up and cosine decay.
#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace trident {

double LrSchedule::at(int64_t step) const {
  if (warmup_steps > 0 && step <= warmup_steps)
    return lr * static_cast<double>(step) / static_cast<double>(warmup_steps);
  const int64_t decay_steps = std::max<int64_t>(1, total_steps - warmup_steps);
  const double progress =
      std::min(1.0, static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps));
  return min_lr + (lr - min_lr) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

}  // namespace trident
