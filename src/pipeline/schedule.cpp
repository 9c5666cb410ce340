// Builds schedules: the compute orders of GPipe and 1F1B, and the lowering pass that
// turns a compute order into a stage's full instruction list.
#include "pipeline/schedule.h"

#include <algorithm>  // std::min
#include <optional>   // std::optional
#include <stdexcept>  // std::invalid_argument
#include <string>     // std::to_string

namespace trident::pipeline {
namespace {

// Throws std::invalid_argument unless stages >= 1, 0 <= stage < stages and
// micro_batches >= 1; `who` prefixes the message.
void check_counts(const char* who, int stages, int stage, int micro_batches) {
  const std::string prefix = std::string(who) + ": ";
  if (stages < 1) {
    throw std::invalid_argument(prefix + "the number of stages must be at least 1, got " +
                                std::to_string(stages));
  }
  if (stage < 0 || stage >= stages) {
    throw std::invalid_argument(prefix + "stage " + std::to_string(stage) +
                                " is out of range for " + std::to_string(stages) +
                                " stages (expected 0.." + std::to_string(stages - 1) + ")");
  }
  if (micro_batches < 1) {
    throw std::invalid_argument(prefix + "the number of micro-batches must be at least 1, got " +
                                std::to_string(micro_batches));
  }
}

}  // namespace

Schedule gpipe_compute_order(int stages, int stage, int micro_batches) {
  check_counts("gpipe", stages, stage, micro_batches);
  Schedule order;
  order.reserve(2 * micro_batches);
  for (int i = 0; i < micro_batches; ++i) order.push_back({Op::kForward, i});
  for (int i = 0; i < micro_batches; ++i) order.push_back({Op::kBackward, i});
  return order;
}

Schedule one_f_one_b_compute_order(int stages, int stage, int micro_batches) {
  check_counts("1f1b", stages, stage, micro_batches);
  // A stage keeps forwarding until the first backward can come back to it: the
  // micro-batch it forwards first needs stages - stage - 1 more forwards downstream,
  // during which this stage forwards as many micro-batches ahead.
  const int warm_up = std::min(stages - stage - 1, micro_batches);
  const int steady = micro_batches - warm_up;
  Schedule order;
  order.reserve(2 * micro_batches);
  int next_forward = 0;
  int next_backward = 0;
  for (int i = 0; i < warm_up; ++i) order.push_back({Op::kForward, next_forward++});
  for (int i = 0; i < steady; ++i) {
    order.push_back({Op::kForward, next_forward++});
    order.push_back({Op::kBackward, next_backward++});
  }
  while (next_backward < micro_batches) order.push_back({Op::kBackward, next_backward++});
  return order;
}

Schedule lower(const Schedule& compute_order, int stages, int stage, int chunks) {
  if (chunks < 1) {
    throw std::invalid_argument("lower: the number of chunks must be at least 1, got " +
                                std::to_string(chunks));
  }
  check_counts("lower", stages, stage, 1);
  const auto is_first = [&](int chunk) { return stage == 0 && chunk == 0; };
  const auto is_last = [&](int chunk) { return stage == stages - 1 && chunk == chunks - 1; };

  Schedule lowered;
  lowered.reserve(3 * compute_order.size() + 2);
  for (const Instruction& in : compute_order) {
    const int mb = in.micro_batch;
    const int c = in.chunk;
    if (c < 0 || c >= chunks) {
      throw std::invalid_argument("lower: " + to_string(in) + " names chunk " + std::to_string(c) +
                                  " but the stage has " + std::to_string(chunks) + " chunk(s)");
    }
    if (in.op == Op::kForward) {
      // Meets the previous virtual stage's SendActivation of this micro-batch.
      if (!is_first(c)) lowered.push_back({Op::kRecvActivation, mb, c});
      lowered.push_back(in);
      // Non-blocking; meets the next virtual stage's RecvActivation of this
      // micro-batch, which comes before that stage's Forward of it.
      if (!is_last(c)) lowered.push_back({Op::kSendActivation, mb, c});
    } else if (in.op == Op::kBackward) {
      // Meets the next virtual stage's SendGrad of this micro-batch.
      if (!is_last(c)) lowered.push_back({Op::kRecvGrad, mb, c});
      lowered.push_back(in);
      // Non-blocking; meets the previous virtual stage's RecvGrad of this
      // micro-batch, which comes before that stage's Backward of it.
      if (!is_first(c)) lowered.push_back({Op::kSendGrad, mb, c});
    } else {
      throw std::invalid_argument("lower: a compute order holds only forwards and backwards, got " +
                                  to_string(in));
    }
  }
  // Every backward of the step is done: gradients are complete on this stage.
  lowered.push_back({Op::kReduceGrads});
  lowered.push_back({Op::kOptimizerStep});
  return lowered;
}

Schedule gpipe(int stages, int stage, int micro_batches) {
  return lower(gpipe_compute_order(stages, stage, micro_batches), stages, stage);
}

Schedule one_f_one_b(int stages, int stage, int micro_batches) {
  return lower(one_f_one_b_compute_order(stages, stage, micro_batches), stages, stage);
}

Schedule make_schedule(PipelineSchedule kind, int stages, int stage, int micro_batches) {
  switch (kind) {
    case PipelineSchedule::kGpipe:
      return gpipe(stages, stage, micro_batches);
    case PipelineSchedule::kOneFOneB:
      return one_f_one_b(stages, stage, micro_batches);
  }
  throw std::invalid_argument("unknown pipeline schedule");
}

Schedule make_schedule(const std::string& name, int stages, int stage, int micro_batches) {
  const std::optional<PipelineSchedule> kind = parse_choice<PipelineSchedule>(name);
  if (!kind)
    throw std::invalid_argument("unknown pipeline schedule '" + name +
                                "' (expected \"gpipe\" or \"1f1b\")");
  return make_schedule(*kind, stages, stage, micro_batches);
}

Schedule compute_only(const Schedule& schedule) {
  Schedule out;
  for (const Instruction& in : schedule) {
    if (in.op == Op::kForward || in.op == Op::kBackward) out.push_back(in);
  }
  return out;
}

}  // namespace trident::pipeline
