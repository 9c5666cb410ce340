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
  int chunk = 0;  ///< interleaved 1F1B: the model chunk (virtual stage chunk * stages + stage)
};

/// The order one stage runs its operations, as pipeline/schedule.cpp orders them: GPipe;
/// 1F1B's warm-up forwards, steady one-forward-one-backward and cool-down backwards
/// (Narayanan et al. 2021); ZB-H1's, with each backward the input half and stage s
/// holding back s weight halves to fill its cool-down (Qi et al. 2023).
std::vector<Op> stage_ops(int stage, int stages, int64_t m, SimulatedSchedule schedule,
                          int chunks) {
  std::vector<Op> ops;
  ops.reserve(static_cast<size_t>((schedule == SimulatedSchedule::kZbH1 ? 3 : 2) * m * chunks));
  if (schedule == SimulatedSchedule::kInterleaved) {
    // Megatron's order: the k-th forward of the stage is micro-batch (k / (p v)) p + k % p
    // of chunk (k / p) % v; backwards visit the chunks from the last. Warm-up: 2 (p - s - 1)
    // + (v - 1) p forwards (all of them when m == p), then pairs, then the rest.
    const int64_t total = m * chunks;
    auto micro_batch = [&](int64_t k) { return (k / (stages * chunks)) * stages + k % stages; };
    auto chunk = [&](int64_t k) { return static_cast<int>((k / stages) % chunks); };
    int64_t warmup = m == stages ? total : 2 * (stages - stage - 1) + (chunks - 1) * stages;
    warmup = std::min(warmup, total);
    int64_t f = 0, b = 0;
    auto forward = [&] { ops.push_back({Kind::kForward, micro_batch(f), chunk(f)}), ++f; };
    auto backward = [&] {
      ops.push_back({Kind::kBackward, micro_batch(b), chunks - 1 - chunk(b)}), ++b;
    };
    for (int64_t i = 0; i < warmup; ++i) forward();
    for (int64_t i = warmup; i < total; ++i) forward(), backward();
    while (b < total) backward();
    return ops;
  }
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
  const int chunks = p.schedule == SimulatedSchedule::kInterleaved ? std::max(p.chunks, 1) : 1;
  const int virtual_stages = static_cast<int>(work.size());
  const int n = virtual_stages / chunks;  // the ranks' stages
  const int64_t m = p.micro_batches;
  std::vector<std::vector<Op>> ops(n);
  for (int s = 0; s < n; ++s) ops[s] = stage_ops(s, n, m, p.schedule, chunks);
  // Finish times of each virtual stage's forward and backward of each micro-batch.
  std::vector<double> fwd_done(static_cast<size_t>(virtual_stages * m), kNever),
      bwd_done(static_cast<size_t>(virtual_stages * m), kNever);
  auto at = [&](std::vector<double>& done, int v, int64_t micro_batch) -> double& {
    return done[static_cast<size_t>(v * m + micro_batch)];
  };
  auto virtual_stage = [&](int s, const Op& op) { return op.chunk * n + s; };
  std::vector<size_t> next(n, 0);     // the stage's next operation
  std::vector<double> left(n, -1.0);  // work left of the operation in progress; -1: not begun
  // When the operation whose computation is done ends its wait (kNever: not waiting).
  std::vector<double> wait_end(n, kNever);
  // When the inputs of stage s's next operation have arrived (kNever: not yet known).
  // A weight half follows its own input half on the same stage: ready once reached.
  auto ready_at = [&](int s) {
    const Op& op = ops[s][next[s]];
    if (op.kind == Kind::kWeight) return 0.0;
    const int v = virtual_stage(s, op);
    if (op.kind == Kind::kForward)
      return v == 0 ? 0.0 : at(fwd_done, v - 1, op.micro_batch) + p.send_s;
    return v == virtual_stages - 1 ? at(fwd_done, v, op.micro_batch)
                                   : at(bwd_done, v + 1, op.micro_batch) + p.send_s;
  };
  auto record = [&](int s, const Op& op, double when) {
    if (op.kind != Kind::kWeight)
      at(op.kind == Kind::kForward ? fwd_done : bwd_done, virtual_stage(s, op), op.micro_batch) =
          when;
  };
  const bool split = p.schedule == SimulatedSchedule::kZbH1;
  auto work_of = [&](int s, const Op& op) {
    const StageWork& w = work[virtual_stage(s, op)];
    if (op.kind == Kind::kForward) return w.forward;
    return split && op.kind == Kind::kBackward ? w.input : w.backward;
  };
  auto wait_of = [&](int s, const Op& op) {
    const StageWork& w = work[virtual_stage(s, op)];
    return op.kind == Kind::kForward ? w.forward_wait : w.backward_wait;
  };
  if (p.cores >= static_cast<double>(n) * p.copies) {
    // A core for every rank: each operation starts when its stage is free and its input
    // has arrived, and runs at full speed. A stage runs on until an input is missing; an
    // operation that completes wakes the stage that waits for what it produced (a
    // forward's next virtual stage, a backward's previous one), so each operation is
    // settled once instead of at every event.
    std::vector<double> free_at(n, 0.0);
    std::vector<int> queue(n);
    std::vector<char> queued(n, 1);
    for (int s = 0; s < n; ++s) queue[s] = n - 1 - s;
    while (!queue.empty()) {
      const int s = queue.back();
      queue.pop_back();
      queued[s] = 0;
      for (; next[s] < ops[s].size(); ++next[s]) {
        const double ready = ready_at(s);
        if (ready == kNever) break;
        const Op& op = ops[s][next[s]];
        free_at[s] = std::max(free_at[s], ready) + work_of(s, op) + wait_of(s, op);
        record(s, op, free_at[s]);
        const int v = virtual_stage(s, op) + (op.kind == Kind::kForward ? 1 : -1);
        if (op.kind == Kind::kWeight || v < 0 || v >= virtual_stages) continue;
        const int waiting = v % n;
        if (waiting != s && !queued[waiting]) {
          queued[waiting] = 1;
          queue.push_back(waiting);
        }
      }
    }
    for (int s = 0; s < n; ++s)
      if (next[s] < ops[s].size()) return kNever;  // a schedule that deadlocks; not one of ours
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
      record(s, ops[s][next[s]], wait_end[s]);
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
