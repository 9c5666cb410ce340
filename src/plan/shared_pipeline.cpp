// Processor-sharing simulation of a pipeline schedule: between events every runnable rank
// progresses at min(1, cores / runnable ranks) seconds of work per second.
#include "plan/shared_pipeline.h"

#include <algorithm>  // std::min, std::max
#include <limits>     // std::numeric_limits

namespace trident::plan {

namespace {

struct Op {
  bool forward = true;
  int64_t micro_batch = 0;
};

/// The order one stage runs its operations: GPipe, or 1F1B's warm-up forwards, steady
/// one-forward-one-backward and cool-down backwards (Narayanan et al. 2021).
std::vector<Op> stage_ops(int stage, int stages, int64_t m, bool gpipe) {
  std::vector<Op> ops;
  if (gpipe) {
    for (int64_t i = 0; i < m; ++i) ops.push_back({true, i});
    for (int64_t i = 0; i < m; ++i) ops.push_back({false, i});
    return ops;
  }
  const int64_t warmup = std::min<int64_t>(stages - stage - 1, m);
  for (int64_t i = 0; i < warmup; ++i) ops.push_back({true, i});
  for (int64_t i = 0; i < m - warmup; ++i) {
    ops.push_back({true, warmup + i});
    ops.push_back({false, i});
  }
  for (int64_t i = m - warmup; i < m; ++i) ops.push_back({false, i});
  return ops;
}

constexpr double kNever = std::numeric_limits<double>::infinity();

}  // namespace

double shared_pipeline_s(const std::vector<StageWork>& work, const SharedPipeline& p) {
  const int n = static_cast<int>(work.size());
  const int64_t m = p.micro_batches;
  std::vector<std::vector<Op>> ops(n);
  for (int s = 0; s < n; ++s) ops[s] = stage_ops(s, n, m, p.gpipe);
  // Finish times of each stage's forward and backward of each micro-batch.
  std::vector<std::vector<double>> fwd_done(n, std::vector<double>(m, kNever)),
      bwd_done(n, std::vector<double>(m, kNever));
  std::vector<size_t> next(n, 0);     // the stage's next operation
  std::vector<double> left(n, -1.0);  // work left of the operation in progress; -1: not begun
  // When the operation whose computation is done ends its wait (kNever: not waiting).
  std::vector<double> wait_end(n, kNever);
  // When the inputs of stage s's next operation have arrived (kNever: not yet known).
  auto ready_at = [&](int s) {
    const Op& op = ops[s][next[s]];
    if (op.forward) return s == 0 ? 0.0 : fwd_done[s - 1][op.micro_batch] + p.send_s;
    return s == n - 1 ? fwd_done[s][op.micro_batch] : bwd_done[s + 1][op.micro_batch] + p.send_s;
  };
  double t = 0;
  for (;;) {
    // First the operations whose waits have ended, so that every stage below sees the
    // inputs they produce.
    for (int s = 0; s < n; ++s) {
      if (wait_end[s] > t) continue;
      const Op& op = ops[s][next[s]];
      (op.forward ? fwd_done : bwd_done)[s][op.micro_batch] = wait_end[s];
      wait_end[s] = kNever;
      left[s] = -1.0;
      ++next[s];
    }
    std::vector<int> running;
    double wake = kNever;  // the earliest arrival or end of a wait
    bool done = true;
    for (int s = 0; s < n; ++s) {
      if (next[s] >= ops[s].size()) continue;
      done = false;
      if (wait_end[s] != kNever) {  // computed, waiting on its collectives
        wake = std::min(wake, wait_end[s]);
        continue;
      }
      const double r = ready_at(s);
      if (r <= t) {
        running.push_back(s);
      } else {
        wake = std::min(wake, r);
      }
    }
    if (done) return t;
    if (running.empty()) {
      if (wake == kNever) return kNever;  // a schedule that deadlocks; not one of ours
      t = wake;
      continue;
    }
    const double runnable = static_cast<double>(running.size()) * p.copies;
    const double rate = std::min(1.0, p.cores / runnable);
    double step = wake - t;
    for (int s : running) {
      const Op& op = ops[s][next[s]];
      if (left[s] < 0) left[s] = op.forward ? work[s].forward : work[s].backward;
      step = std::min(step, left[s] / rate);
    }
    t += step;
    for (int s : running) {
      left[s] -= step * rate;
      if (left[s] > 1e-15) continue;
      const Op& op = ops[s][next[s]];
      wait_end[s] = t + (op.forward ? work[s].forward_wait : work[s].backward_wait);
    }
  }
}

}  // namespace trident::plan
