// Pipeline schedules as data: the instruction set, the compute orders of GPipe and
// 1F1B, the lowering pass that inserts point-to-point communication, and the short
// text form ("F0 F1 B0 ...") that schedules print as and parse from.
#pragma once

#include <string>  // std::string
#include <vector>  // std::vector

#include "config/choices.h"  // PipelineSchedule

namespace trident::pipeline {

/// What one step of a stage's schedule does. The runtime dispatches on it.
enum class Op {
  kRecvActivation,  ///< block until the previous stage's activation arrives
  kForward,         ///< forward of one micro-batch through this stage's layers
  kSendActivation,  ///< post (non-blocking) this stage's output; met by the next
                    ///< stage's kRecvActivation of the same micro-batch
  kRecvGrad,        ///< block until the next stage's input-gradient arrives
  kBackward,        ///< backward of one micro-batch through this stage's layers
  kSendGrad,        ///< post (non-blocking) this stage's input-gradient; met by the
                    ///< previous stage's kRecvGrad of the same micro-batch
  kReduceGrads,     ///< data-parallel gradient reduction, once per step
  kOptimizerStep,   ///< parameter update, once per step
};

/// One instruction. `micro_batch` is -1 for kReduceGrads and kOptimizerStep.
struct Instruction {
  Op op;
  int micro_batch = -1;
  int chunk = 0;  ///< virtual stage (model chunk) on this rank, for interleaved 1F1B

  bool operator==(const Instruction& other) const {
    return op == other.op && micro_batch == other.micro_batch && chunk == other.chunk;
  }
  bool operator!=(const Instruction& other) const { return !(*this == other); }
};

/// One stage's instructions for one optimizer step, in execution order.
using Schedule = std::vector<Instruction>;

/// GPipe: all forwards (0..m-1), then all backwards (0..m-1), lowered.
Schedule gpipe(int stages, int stage, int micro_batches);

/// 1F1B: min(stages - stage - 1, m) warm-up forwards, then steady pairs F(i) B(j),
/// then cool-down backwards; lowered.
Schedule one_f_one_b(int stages, int stage, int micro_batches);

/// Builds the schedule of one stage. Throws std::invalid_argument for counts out of range.
Schedule make_schedule(PipelineSchedule kind, int stages, int stage, int micro_batches);

/// As above, for the schedule called `name` ("gpipe" or "1f1b", as parallel.schedule names
/// them). Throws std::invalid_argument for an unknown name.
Schedule make_schedule(const std::string& name, int stages, int stage, int micro_batches);

/// The compute order (forwards and backwards only) of GPipe for one stage.
Schedule gpipe_compute_order(int stages, int stage, int micro_batches);

/// The compute order (forwards and backwards only) of 1F1B for one stage.
Schedule one_f_one_b_compute_order(int stages, int stage, int micro_batches);

/// Inserts communication around a compute order and appends ReduceGrads and
/// OptimizerStep. A chunk c of stage s is virtual stage c * stages + s out of
/// stages * chunks; the first virtual stage receives no activations and the last
/// receives no gradients. Sends are non-blocking, receives block (see docs/pipeline.md).
Schedule lower(const Schedule& compute_order, int stages, int stage, int chunks = 1);

/// Keeps only the forwards and backwards of a schedule.
Schedule compute_only(const Schedule& schedule);

/// The mnemonic of one instruction: F3, B3, RA3, SA3, RG3, SG3, RED, OPT; a chunk
/// other than 0 is appended as "c<chunk>", e.g. F3c1.
std::string to_string(const Instruction& instruction);

/// The schedule as space-separated mnemonics; `compute_only` prints only F and B.
std::string to_string(const Schedule& schedule, bool compute_only = true);

/// Parses either text form back into instructions.
/// Throws std::invalid_argument naming the bad token and its position.
Schedule parse_schedule(const std::string& text);

}  // namespace trident::pipeline
