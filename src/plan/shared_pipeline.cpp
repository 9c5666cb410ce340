// Processor-sharing simulation of a pipeline schedule: between events every runnable rank
// progresses at min(1, cores / runnable ranks) seconds of work per second.
#include "plan/shared_pipeline.h"

#include <algorithm>  // std::min, std::max
#include <limits>     // std::numeric_limits

namespace trident::plan {

namespace {

enum class Kind { kForward, kBackward, kWeight };

struct Op {
  Kind kind = Kind::kForward;
  int64_t micro_batch = 0;
};

/// The order one stage runs its operations, as pipeline/schedule.cpp orders them: GPipe;
/// 1F1B's warm-up forwards, steady one-forward-one-backward and cool-down backwards
/// (Narayanan et al. 2021); ZB-H1's, with each backward the input half and stage s
/// holding back s weight halves to fill its cool-down (Qi et al. 2023).
std::vector<Op> stage_ops(int stage, int stages, int64_t m, SimulatedSchedule schedule) {
  std::vector<Op> ops;
  if (schedule == SimulatedSchedule::kGpipe) {
    for (int64_t i = 0; i < m; ++i) ops.push_back({Kind::kForward, i});
    for (int64_t i = 0; i < m; ++i) ops.push_back({Kind::kBackward, i});
    return ops;
  }
  const int64_t warmup = std::min<int64_t>(stages - stage - 1, m);
  if (schedule == SimulatedSchedule::kOneFOneB) {
    for (int64_t i = 0; i < warmup; ++i) ops.push_back({Kind::kForward, i});
    for (int64_t i = 0; i < m - warmup; ++i) {
      ops.push_back({Kind::kForward, warmup + i});
      ops.push_back({Kind::kBackward, i});
    }
    for (int64_t i = m - warmup; i < m; ++i) ops.push_back({Kind::kBackward, i});
    return ops;
  }
  int64_t forward = 0, input = 0, weight = 0;
  for (int64_t i = 0; i < warmup; ++i) ops.push_back({Kind::kForward, forward++});
  for (int64_t i = warmup; i < m; ++i) {
    ops.push_back({Kind::kForward, forward++});
    ops.push_back({Kind::kBackward, input++});
    if (input - weight > stage) ops.push_back({Kind::kWeight, weight++});
  }
  while (input < m) {
    ops.push_back({Kind::kBackward, input++});
    ops.push_back({Kind::kWeight, weight++});
  }
  while (weight < m) ops.push_back({Kind::kWeight, weight++});
  return ops;
}

constexpr double kNever = std::numeric_limits<double>::infinity();

}  // namespace

double shared_pipeline_s(const std::vector<StageWork>& work, const SharedPipeline& p) {
  const int n = static_cast<int>(work.size());
  const int64_t m = p.micro_batches;
  std::vector<std::vector<Op>> ops(n);
  for (int s = 0; s < n; ++s) ops[s] = stage_ops(s, n, m, p.schedule);
  // Finish times of each stage's forward and backward of each micro-batch.
  std::vector<std::vector<double>> fwd_done(n, std::vector<double>(m, kNever)),
      bwd_done(n, std::vector<double>(m, kNever));
  std::vector<size_t> next(n, 0);     // the stage's next operation
  std::vector<double> left(n, -1.0);  // work left of the operation in progress; -1: not begun
  // When the operation whose computation is done ends its wait (kNever: not waiting).
  std::vector<double> wait_end(n, kNever);
  // When the inputs of stage s's next operation have arrived (kNever: not yet known).
  // A weight half follows its own input half on the same stage: ready once reached.
  auto ready_at = [&](int s) {
    const Op& op = ops[s][next[s]];
    if (op.kind == Kind::kWeight) return 0.0;
    if (op.kind == Kind::kForward) return s == 0 ? 0.0 : fwd_done[s - 1][op.micro_batch] + p.send_s;
    return s == n - 1 ? fwd_done[s][op.micro_batch] : bwd_done[s + 1][op.micro_batch] + p.send_s;
  };
  const bool split = p.schedule == SimulatedSchedule::kZbH1;
  auto work_of = [&](int s, const Op& op) {
    if (op.kind == Kind::kForward) return work[s].forward;
    return split && op.kind == Kind::kBackward ? work[s].input : work[s].backward;
  };
  auto wait_of = [&](int s, const Op& op) {
    return op.kind == Kind::kForward ? work[s].forward_wait : work[s].backward_wait;
  };
  if (p.cores >= static_cast<double>(n) * p.copies) {
    // A core for every rank: each operation starts when its stage is free and its input
    // has arrived, and runs at full speed. Sweeping the stages down and back up settles
    // every operation whose input is known; ops * stages events are not needed.
    std::vector<double> free_at(n, 0.0);
    int64_t left_ops = 0;
    for (const auto& o : ops) left_ops += static_cast<int64_t>(o.size());
    while (left_ops > 0) {
      const int64_t before = left_ops;
      for (int sweep = 0; sweep < 2 * n; ++sweep) {
        const int s = sweep < n ? sweep : 2 * n - 1 - sweep;
        for (; next[s] < ops[s].size(); ++next[s], --left_ops) {
          const double ready = ready_at(s);
          if (ready == kNever) break;
          const Op& op = ops[s][next[s]];
          free_at[s] = std::max(free_at[s], ready) + work_of(s, op) + wait_of(s, op);
          if (op.kind != Kind::kWeight)
            (op.kind == Kind::kForward ? fwd_done : bwd_done)[s][op.micro_batch] = free_at[s];
        }
      }
      if (left_ops == before) return kNever;  // a schedule that deadlocks; not one of ours
    }
    return *std::max_element(free_at.begin(), free_at.end());
  }
  double t = 0;
  std::vector<int> running;
  running.reserve(n);
  for (;;) {
    // First the operations whose waits have ended, so that every stage below sees the
    // inputs they produce.
    for (int s = 0; s < n; ++s) {
      if (wait_end[s] > t) continue;
      const Op& op = ops[s][next[s]];
      if (op.kind != Kind::kWeight)
        (op.kind == Kind::kForward ? fwd_done : bwd_done)[s][op.micro_batch] = wait_end[s];
      wait_end[s] = kNever;
      left[s] = -1.0;
      ++next[s];
    }
    running.clear();
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
      if (left[s] < 0) left[s] = work_of(s, op);
      step = std::min(step, left[s] / rate);
    }
    t += step;
    for (int s : running) {
      left[s] -= step * rate;
      if (left[s] > 1e-15) continue;
      const Op& op = ops[s][next[s]];
      wait_end[s] = t + wait_of(s, op);
    }
  }
}

}  // namespace trident::plan
