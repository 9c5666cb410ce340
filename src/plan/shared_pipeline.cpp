// Processor-sharing simulation of a pipeline schedule: between events every runnable rank
// progresses at min(1, cores / runnable ranks) seconds of work per second.
#include "plan/shared_pipeline.h"

#include <algorithm>  // std::min, std::max
#include <limits>     // std::numeric_limits

#include "pipeline/schedule.h"  // compute_order: the runtime's own order of each stage

namespace trident::plan {

namespace {

using pipeline::Instruction;
using pipeline::Op;

bool is_forward(const Instruction& op) { return op.op == Op::kForward; }
bool is_weight(const Instruction& op) { return op.op == Op::kBackwardWeight; }

constexpr double kNever = std::numeric_limits<double>::infinity();

}  // namespace

double shared_pipeline_s(const std::vector<StageWork>& work, const SharedPipeline& p) {
  const int chunks = p.schedule == PipelineSchedule::kInterleaved1F1B ? std::max(p.chunks, 1) : 1;
  const int virtual_stages = static_cast<int>(work.size());
  const int n = virtual_stages / chunks;  // the ranks' stages
  const int64_t m = p.micro_batches;
  std::vector<pipeline::Schedule> ops(n);
  for (int s = 0; s < n; ++s)
    ops[s] = pipeline::compute_order(p.schedule, n, s, static_cast<int>(m), chunks);
  // Finish times of each virtual stage's forward and backward of each micro-batch.
  std::vector<double> fwd_done(static_cast<size_t>(virtual_stages * m), kNever),
      bwd_done(static_cast<size_t>(virtual_stages * m), kNever);
  auto at = [&](std::vector<double>& done, int v, int64_t micro_batch) -> double& {
    return done[static_cast<size_t>(v * m + micro_batch)];
  };
  auto virtual_stage = [&](int s, const Instruction& op) { return op.chunk * n + s; };
  std::vector<size_t> next(n, 0);  // the stage's next operation
  // When the inputs of stage s's next operation have arrived (kNever: not yet known).
  // A weight half follows its own input half on the same stage: ready once reached.
  auto ready_at = [&](int s) {
    const Instruction& op = ops[s][next[s]];
    if (is_weight(op)) return 0.0;
    const int v = virtual_stage(s, op);
    if (is_forward(op)) return v == 0 ? 0.0 : at(fwd_done, v - 1, op.micro_batch) + p.send_s;
    return v == virtual_stages - 1 ? at(fwd_done, v, op.micro_batch)
                                   : at(bwd_done, v + 1, op.micro_batch) + p.send_s;
  };
  auto record = [&](int s, const Instruction& op, double when) {
    if (!is_weight(op))
      at(is_forward(op) ? fwd_done : bwd_done, virtual_stage(s, op), op.micro_batch) = when;
  };
  // ZB-H1's input half (BI) takes `input`; its weight half (W), like a whole backward,
  // `backward`.
  auto work_of = [&](int s, const Instruction& op) {
    const StageWork& w = work[virtual_stage(s, op)];
    if (is_forward(op)) return w.forward;
    return op.op == Op::kBackwardInput ? w.input : w.backward;
  };
  auto wait_of = [&](int s, const Instruction& op) {
    const StageWork& w = work[virtual_stage(s, op)];
    return is_forward(op) ? w.forward_wait : w.backward_wait;
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
        const Instruction& op = ops[s][next[s]];
        free_at[s] = std::max(free_at[s], ready) + work_of(s, op) + wait_of(s, op);
        record(s, op, free_at[s]);
        const int v = virtual_stage(s, op) + (is_forward(op) ? 1 : -1);
        if (is_weight(op) || v < 0 || v >= virtual_stages) continue;
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
  // Shared cores: step from event to event, every runnable rank at its share of them.
  std::vector<double> left(n, -1.0);  // work left of the operation in progress; -1: not begun
  // When the operation whose computation is done ends its wait (kNever: not waiting).
  std::vector<double> wait_end(n, kNever);
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
      const Instruction& op = ops[s][next[s]];
      if (left[s] < 0) left[s] = work_of(s, op);
      step = std::min(step, left[s] / rate);
    }
    t += step;
    for (int s : running) {
      left[s] -= step * rate;
      if (left[s] > 1e-15) continue;
      wait_end[s] = t + wait_of(s, ops[s][next[s]]);
    }
  }
}

}  // namespace trident::plan
