// SpikeGuard: robust statistics over a window of healthy steps (the median as the level,
// the median of successive differences as the noise); a spike must clear both a ratio to
// the median and a number of deviations above it, so that neither a flat loss (tiny noise)
// nor a noisy one (large ratio) fires alone.
#include "train/spike_guard.h"

#include <algorithm>  // std::max
#include <cmath>      // std::isfinite, std::abs, std::sqrt
#include <cstdio>     // std::snprintf
#include <vector>

#include "common/median.h"  // median

namespace trident {

SpikeGuard::Stats SpikeGuard::stats(double GuardSample::*field) const {
  std::vector<double> values, steps;
  for (const GuardSample& s : history_) values.push_back(s.*field);
  for (size_t i = 1; i < values.size(); ++i) steps.push_back(std::abs(values[i] - values[i - 1]));
  Stats out;
  out.median = median(values);
  // The noise from successive differences, not from deviations around the median: a loss
  // that falls fast spreads far around its median without being noisy. For independent
  // normal noise, median |x_i - x_{i-1}| = 0.6745 * sqrt(2) * sigma.
  out.spread = steps.empty() ? 0.0 : 1.4826 / std::sqrt(2.0) * median(steps);
  return out;
}

bool SpikeGuard::beyond(double value, double GuardSample::*field, double ratio,
                        double sigmas) const {
  const Stats s = stats(field);
  return value > ratio * s.median && value > s.median + sigmas * s.spread;
}

StepVerdict SpikeGuard::judge(double loss, double grad_norm) const {
  if (!std::isfinite(loss) || !std::isfinite(grad_norm)) return StepVerdict::kNonFinite;
  if (!config_.enabled || static_cast<int64_t>(history_.size()) < config_.min_history)
    return StepVerdict::kHealthy;
  if (beyond(loss, &GuardSample::loss, config_.loss_ratio, config_.loss_sigmas) ||
      beyond(grad_norm, &GuardSample::grad_norm, config_.grad_norm_ratio, config_.grad_norm_sigmas))
    return StepVerdict::kSpike;
  return StepVerdict::kHealthy;
}

std::string SpikeGuard::explain(double loss, double grad_norm) const {
  const Stats l = stats(&GuardSample::loss), g = stats(&GuardSample::grad_norm);
  char text[320];
  std::snprintf(text, sizeof text,
                "loss %.6g against a median of %.6g (deviation %.3g), gradient norm %.6g "
                "against %.6g (deviation %.3g) over the last %zu healthy steps",
                loss, l.median, l.spread, grad_norm, g.median, g.spread, history_.size());
  return text;
}

void SpikeGuard::record(int64_t step, StepVerdict verdict, double loss, double grad_norm) {
  if (verdict != StepVerdict::kHealthy) {
    last_skip_ = step;
    return;
  }
  history_.push_back({step, loss, grad_norm});
  while (static_cast<int64_t>(history_.size()) > config_.window) history_.pop_front();
}

bool SpikeGuard::calm(int64_t step) const {
  if (!config_.enabled || last_skip_ == 0) return true;
  return step - last_skip_ >= std::max<int64_t>(config_.rollback_after, 1);
}

void SpikeGuard::save_to(TrainerProgress& progress, int64_t step) const {
  progress.guard_history.assign(history_.begin(), history_.end());
  progress.guard_last_skip = last_skip_;
  progress.good = calm(step);
}

void SpikeGuard::restore_from(const TrainerProgress& progress) {
  history_.assign(progress.guard_history.begin(), progress.guard_history.end());
  last_skip_ = progress.guard_last_skip;
}

}  // namespace trident
