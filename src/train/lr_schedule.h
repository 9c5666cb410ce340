// Learning rate of each optimizer step: linear warm-up, then cosine decay to min_lr over
// the rest of train.steps (a run stopped early with train.stop_at keeps the same curve).
#pragma once
#include <cstdint>

namespace trident {

struct LrSchedule {
  double lr = 1e-3;
  double min_lr = 1e-4;
  int64_t warmup_steps = 10;
  int64_t total_steps = 100;

  /// The rate of update number `step` (1-based): lr * step / warmup during warm-up, then
  /// min_lr + (lr - min_lr) * (1 + cos(pi * progress)) / 2.
  double at(int64_t step) const;
};

}  // namespace trident
