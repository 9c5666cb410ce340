// SpikeGuard: robust statistics over a window of healthy steps (the median as the level,
// the median of successive differences as the noise); a spike must clear both a ratio to
// the median and a number of deviations above it, so that neither a flat loss (tiny noise)
// nor a noisy one (large ratio) fires alone. Only rises count: the tests are one-sided.
#include "train/spike_guard.h"

#include <algorithm>  // std::max, std::count_if
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

std::string SpikeGuard::beyond(const char* name, double value, double GuardSample::*field,
                               double ratio, double sigmas) const {
  const Stats s = stats(field);
  if (!(value > ratio * s.median && value > s.median + sigmas * s.spread)) return "";
  char text[320];
  std::snprintf(text, sizeof text,
                "%s %.6g above %.3g x and %.3g deviations over its median of %.6g (deviation "
                "%.3g) in the last %zu healthy steps",
                name, value, ratio, sigmas, s.median, s.spread, history_.size());
  return text;
}

bool SpikeGuard::settled() const {
  const auto after_warmup =
      std::count_if(history_.begin(), history_.end(),
                    [this](const GuardSample& s) { return s.step > warmup_steps_; });
  return after_warmup >= config_.min_history;
}

GuardJudgement SpikeGuard::judge(double loss, double grad_norm) const {
  GuardJudgement out;
  if (!std::isfinite(loss) || !std::isfinite(grad_norm)) {
    out.verdict = StepVerdict::kNonFinite;
    return out;
  }
  if (!config_.enabled || !settled()) return out;
  out.reason = beyond("loss", loss, &GuardSample::loss, config_.loss_ratio, config_.loss_sigmas);
  const std::string norm = beyond("gradient norm", grad_norm, &GuardSample::grad_norm,
                                  config_.grad_norm_ratio, config_.grad_norm_sigmas);
  if (out.reason.empty() && !norm.empty()) {
    if (clipped_)
      out.warning = norm + "; not skipped: optimizer.grad_clip bounds the update";
    else
      out.reason = norm;
  }
  if (!out.reason.empty()) out.verdict = StepVerdict::kSpike;
  return out;
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
