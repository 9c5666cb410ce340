// Builds schedules: the compute orders of GPipe, 1F1B, interleaved 1F1B and ZB-H1, and
// the lowering pass that
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

Schedule interleaved_1f1b_compute_order(int stages, int stage, int micro_batches, int chunks) {
  check_counts("interleaved-1f1b", stages, stage, micro_batches);
  if (chunks < 1) {
    throw std::invalid_argument(
        "interleaved-1f1b: the number of virtual stages per stage must be at least 1, got " +
        std::to_string(chunks));
  }
  if (micro_batches % stages != 0) {
    throw std::invalid_argument("interleaved-1f1b: the micro-batches (" +
                                std::to_string(micro_batches) +
                                ") must be a multiple of the stages (" + std::to_string(stages) +
                                "), as in Megatron's interleaved schedule");
  }
  const int total = micro_batches * chunks;
  // The k-th forward (or backward) of the stage: rounds of `stages` micro-batches go
  // through chunk 0, then chunk 1, ...; the backwards visit the chunks from the last.
  const auto micro_batch = [&](int k) { return (k / (stages * chunks)) * stages + k % stages; };
  const auto forward_chunk = [&](int k) { return (k / stages) % chunks; };
  const auto backward_chunk = [&](int k) { return chunks - 1 - forward_chunk(k); };
  // A chunk's first backward needs the micro-batch to pass the later stages of this
  // chunk and every later chunk: the stages after this one twice (there and back),
  // plus a full round of the pipeline per later chunk.
  int warm_up = micro_batches == stages ? total : 2 * (stages - stage - 1) + (chunks - 1) * stages;
  warm_up = std::min(warm_up, total);
  Schedule order;
  order.reserve(2 * total);
  int next_forward = 0;
  int next_backward = 0;
  const auto forward = [&] {
    order.push_back({Op::kForward, micro_batch(next_forward), forward_chunk(next_forward)});
    ++next_forward;
  };
  const auto backward = [&] {
    order.push_back({Op::kBackward, micro_batch(next_backward), backward_chunk(next_backward)});
    ++next_backward;
  };
  for (int i = 0; i < warm_up; ++i) forward();
  for (int i = warm_up; i < total; ++i) {
    forward();
    backward();
  }
  while (next_backward < total) backward();
  return order;
}

Schedule zb_h1_compute_order(int stages, int stage, int micro_batches) {
  check_counts("zb-h1", stages, stage, micro_batches);
  // 1F1B's warm-up and steady pairs, with B the input-gradient half only. Stage s holds
  // back s weight-gradient halves (W) in the steady phase: they fill the cool-down,
  // where 1F1B's stage s waits for the later stages' backwards. The earliest stages have
  // the most warm-up forwards and the fewest deferred W's, so no stage holds more than
  // `stages` micro-batches' activations, 1F1B's peak.
  const int warm_up = std::min(stages - stage - 1, micro_batches);
  const int deferred = stage;
  Schedule order;
  order.reserve(3 * micro_batches);
  int next_forward = 0, next_input = 0, next_weight = 0;
  const auto input = [&] { order.push_back({Op::kBackwardInput, next_input++}); };
  const auto weight = [&] { order.push_back({Op::kBackwardWeight, next_weight++}); };
  for (int i = 0; i < warm_up; ++i) order.push_back({Op::kForward, next_forward++});
  for (int i = warm_up; i < micro_batches; ++i) {
    order.push_back({Op::kForward, next_forward++});
    input();
    if (next_input - next_weight > deferred) weight();
  }
  while (next_input < micro_batches) {
    input();
    weight();
  }
  while (next_weight < micro_batches) weight();
  return order;
}

bool is_compute(Op op) {
  return op == Op::kForward || op == Op::kBackward || op == Op::kBackwardInput ||
         op == Op::kBackwardWeight;
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
    } else if (in.op == Op::kBackward || in.op == Op::kBackwardInput) {
      // Meets the next virtual stage's SendGrad of this micro-batch.
      if (!is_last(c)) lowered.push_back({Op::kRecvGrad, mb, c});
      lowered.push_back(in);
      // Non-blocking; meets the previous virtual stage's RecvGrad of this
      // micro-batch, which comes before that stage's Backward of it.
      if (!is_first(c)) lowered.push_back({Op::kSendGrad, mb, c});
    } else if (in.op == Op::kBackwardWeight) {
      lowered.push_back(in);  // local: the weight gradient needs nothing from a neighbour
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

Schedule compute_order(PipelineSchedule kind, int stages, int stage, int micro_batches,
                       int chunks) {
  if (kind != PipelineSchedule::kInterleaved1F1B && chunks != 1) {
    throw std::invalid_argument(std::string("schedule ") + name_of(kind) +
                                " runs one model chunk per stage, got " + std::to_string(chunks) +
                                " virtual stages; use interleaved-1f1b or 1 virtual stage");
  }
  switch (kind) {
    case PipelineSchedule::kGpipe:
      return gpipe_compute_order(stages, stage, micro_batches);
    case PipelineSchedule::kOneFOneB:
      return one_f_one_b_compute_order(stages, stage, micro_batches);
    case PipelineSchedule::kInterleaved1F1B:
      return interleaved_1f1b_compute_order(stages, stage, micro_batches, chunks);
    case PipelineSchedule::kZbH1:
      return zb_h1_compute_order(stages, stage, micro_batches);
  }
  throw std::invalid_argument("unknown pipeline schedule");
}

Schedule make_schedule(PipelineSchedule kind, int stages, int stage, int micro_batches,
                       int chunks) {
  return lower(compute_order(kind, stages, stage, micro_batches, chunks), stages, stage, chunks);
}

Schedule make_schedule(const std::string& name, int stages, int stage, int micro_batches,
                       int chunks) {
  const std::optional<PipelineSchedule> kind = parse_choice<PipelineSchedule>(name);
  if (!kind) {
    std::string expected;
    for (const auto& c : choice_names<PipelineSchedule>())
      expected += (expected.empty() ? "\"" : ", \"") + std::string(c.name) + "\"";
    throw std::invalid_argument("unknown pipeline schedule '" + name + "' (expected one of " +
                                expected + ")");
  }
  return make_schedule(*kind, stages, stage, micro_batches, chunks);
}

std::vector<Schedule> make_schedules(PipelineSchedule kind, int stages, int micro_batches,
                                     int chunks) {
  std::vector<Schedule> per_stage;
  for (int s = 0; s < stages; ++s)
    per_stage.push_back(make_schedule(kind, stages, s, micro_batches, chunks));
  return per_stage;
}

std::vector<Schedule> make_schedules(const std::string& name, int stages, int micro_batches,
                                     int chunks) {
  std::vector<Schedule> per_stage;
  for (int s = 0; s < stages; ++s)
    per_stage.push_back(make_schedule(name, stages, s, micro_batches, chunks));
  return per_stage;
}

Schedule compute_only(const Schedule& schedule) {
  Schedule out;
  for (const Instruction& in : schedule) {
    if (is_compute(in.op)) out.push_back(in);
  }
  return out;
}

}  // namespace trident::pipeline
