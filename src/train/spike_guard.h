// The loss-spike guard: judges each step's loss and gradient norm against the median and
// the noise (from successive differences) of the recent healthy steps, so that a step whose
// loss jumps far above them is skipped (as a non-finite one is) before its update reaches
// the weights. Torch-free.
#pragma once
#include <cstdint>
#include <deque>
#include <string>

#include "checkpoint/trainer_progress.h"  // GuardSample, TrainerProgress
#include "config/config.h"                // GuardConfig

namespace trident {

enum class StepVerdict { kHealthy, kNonFinite, kSpike };

/// The guard's word on one step: the verdict, why a spike is one (naming the quantity that
/// triggered), and a warning for a healthy step whose gradient norm jumped.
struct GuardJudgement {
  StepVerdict verdict = StepVerdict::kHealthy;
  std::string reason;   ///< kSpike: "loss 9.1 above ..." or "gradient norm 95 above ..."
  std::string warning;  ///< kHealthy: a gradient-norm jump that clipping bounds
};

class SpikeGuard {
 public:
  /// `clipped`: optimizer.grad_clip > 0, so that no update's size follows the gradient norm;
  /// `warmup_steps`: optimizer.warmup_steps, during which the loss makes its initial fall.
  SpikeGuard(const GuardConfig& config, bool clipped, int64_t warmup_steps)
      : config_(config), clipped_(clipped), warmup_steps_(warmup_steps) {}

  /// The verdict on a step's loss and gradient norm. Both are the same on every rank, so
  /// every rank reaches the same verdict without a collective. A non-finite value is
  /// always kNonFinite. Spikes are judged only with the guard enabled and the loss settled
  /// (settled()); then a loss above both thresholds is a
  /// spike, and so is a gradient norm above both when the update is not clipped. Under
  /// clipping a gradient-norm jump alone is a warning: the update's size is bounded, and
  /// early in training on real text such jumps come with a falling loss.
  GuardJudgement judge(double loss, double grad_norm) const;

  /// Whether the loss has settled from its initial fall: the window holds min_history
  /// healthy steps after the learning rate's warm-up. During the warm-up the loss falls
  /// fast and the gradient norm swings; neither says that a batch went wrong.
  bool settled() const;

  /// Takes the step's outcome into the history: a healthy step joins the window, a skipped
  /// one marks the guard as alarmed.
  void record(int64_t step, StepVerdict verdict, double loss, double grad_norm);

  /// Whether a checkpoint of `step` is one to roll back to: no step among the last
  /// max(rollback_after, 1) (this one included) was skipped.
  bool calm(int64_t step) const;

  /// The history and alarm, as a checkpoint keeps them (`good`: calm at `step`).
  void save_to(TrainerProgress& progress, int64_t step) const;
  void restore_from(const TrainerProgress& progress);

 private:
  struct Stats {
    double median = 0.0, spread = 0.0;  // spread: the noise's standard deviation, robustly
  };
  Stats stats(double GuardSample::*field) const;
  /// "loss 9.1 above 1.5 x and 6 deviations over its median of 2.0 (deviation 0.1)", or
  /// "" when `value` does not clear both thresholds.
  std::string beyond(const char* name, double value, double GuardSample::*field, double ratio,
                     double sigmas) const;

  GuardConfig config_;
  bool clipped_;
  int64_t warmup_steps_;
  std::deque<GuardSample> history_;  // the newest `window` healthy steps, oldest first
  int64_t last_skip_ = 0;
};

}  // namespace trident
