// The loss-spike guard: judges each step's loss and gradient norm against the median and
// the noise (from successive differences) of the recent healthy steps, so that a step far
// above them is skipped (as a non-finite one is) before its update reaches the weights.
// Torch-free.
#pragma once
#include <cstdint>
#include <deque>
#include <string>

#include "checkpoint/trainer_progress.h"  // GuardSample, TrainerProgress
#include "config/config.h"                // GuardConfig

namespace trident {

enum class StepVerdict { kHealthy, kNonFinite, kSpike };

class SpikeGuard {
 public:
  explicit SpikeGuard(const GuardConfig& config) : config_(config) {}

  /// The verdict on a step's loss and gradient norm. Both are the same on every rank, so
  /// every rank reaches the same verdict without a collective. A non-finite value is
  /// always kNonFinite; kSpike only when the guard is enabled and has seen min_history
  /// healthy steps.
  StepVerdict judge(double loss, double grad_norm) const;
  /// Why judge() called these values a spike: the value, the median, the thresholds.
  std::string explain(double loss, double grad_norm) const;

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
  bool beyond(double value, double GuardSample::*field, double ratio, double sigmas) const;

  GuardConfig config_;
  std::deque<GuardSample> history_;  // the newest `window` healthy steps, oldest first
  int64_t last_skip_ = 0;
};

}  // namespace trident
