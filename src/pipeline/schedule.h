// Pipeline schedules as data: the instruction set, the compute orders of GPipe, 1F1B,
// interleaved 1F1B and ZB-H1, the lowering pass that inserts point-to-point communication, and the
// short text form ("F0 F1 B0 ...") that schedules print as and parse from.
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
  kBackwardInput,   ///< zero-bubble "B": only the input-gradient half of a backward; the
                    ///< graph is kept for the micro-batch's kBackwardWeight
  kBackwardWeight,  ///< zero-bubble "W": the weight-gradient half, after kBackwardInput
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

/// Builds the schedule of one stage; `chunks` (parallel.virtual_stages) must be 1 except
/// for interleaved 1F1B. Throws std::invalid_argument for counts out of range.
Schedule make_schedule(PipelineSchedule kind, int stages, int stage, int micro_batches,
                       int chunks = 1);

/// As above, for the schedule called `name` (as parallel.schedule names them: "gpipe",
/// "1f1b", "interleaved-1f1b", "zb-h1"). Throws std::invalid_argument for an unknown name.
Schedule make_schedule(const std::string& name, int stages, int stage, int micro_batches,
                       int chunks = 1);

/// Every stage's schedule (stage s at index s), as the checkers take them.
std::vector<Schedule> make_schedules(PipelineSchedule kind, int stages, int micro_batches,
                                     int chunks = 1);
std::vector<Schedule> make_schedules(const std::string& name, int stages, int micro_batches,
                                     int chunks = 1);

/// The compute order (F, B, or ZB-H1's BI and W; no communication) of schedule `kind` for
/// one stage: what the runtime computes, in order, and what the planner simulates.
/// Throws std::invalid_argument as make_schedule does.
Schedule compute_order(PipelineSchedule kind, int stages, int stage, int micro_batches,
                       int chunks = 1);

/// The compute order of GPipe for one stage: all forwards (0..m-1), then all backwards
/// (0..m-1).
Schedule gpipe_compute_order(int stages, int stage, int micro_batches);

/// The compute order of 1F1B for one stage: min(stages - stage - 1, m) warm-up forwards,
/// then steady pairs F(i) B(j), then cool-down backwards.
Schedule one_f_one_b_compute_order(int stages, int stage, int micro_batches);

/// The compute order of interleaved 1F1B (Megatron's virtual pipeline) for one stage: each
/// stage holds `chunks` model chunks; chunk c of stage s is virtual stage c * stages + s,
/// and micro_batches must be divisible by stages. Megatron's order: forward k
/// (0-based) of the stage is micro-batch (k / (stages * chunks)) * stages + k % stages of
/// chunk (k / stages) % chunks; backwards visit the chunks in reverse. Warm-up is
/// 2 * (stages - stage - 1) + (chunks - 1) * stages forwards (all of them when
/// micro_batches == stages), then F/B pairs, then the remaining backwards.
Schedule interleaved_1f1b_compute_order(int stages, int stage, int micro_batches, int chunks);

/// The compute order of ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism") for one
/// stage: 1F1B's order with each backward split into B (input gradient, kBackwardInput) and
/// W (weight gradient, kBackwardWeight); the W's a stage cannot run at once are deferred
/// into its cool-down bubble.
Schedule zb_h1_compute_order(int stages, int stage, int micro_batches);

/// Inserts communication around a compute order and appends ReduceGrads and
/// OptimizerStep. A chunk c of stage s is virtual stage c * stages + s out of
/// stages * chunks; the first virtual stage receives no activations and the last
/// receives no gradients. Sends are non-blocking, receives block (see docs/pipeline.md).
Schedule lower(const Schedule& compute_order, int stages, int stage, int chunks = 1);

/// Whether `op` computes (F, B, the B and W halves) rather than communicates or updates.
bool is_compute(Op op);

/// Keeps only the computing instructions (F, B, BI, W) of a schedule.
Schedule compute_only(const Schedule& schedule);

/// The mnemonic of one instruction: F3, B3, BI3 (input half), W3 (weight half), RA3, SA3,
/// RG3, SG3, RED, OPT; a chunk
/// other than 0 is appended as "c<chunk>", e.g. F3c1.
std::string to_string(const Instruction& instruction);

/// The schedule as space-separated mnemonics; `compute_only` prints only F and B.
std::string to_string(const Schedule& schedule, bool compute_only = true);

/// Parses either text form back into instructions.
/// Throws std::invalid_argument naming the bad token and its position.
Schedule parse_schedule(const std::string& text);

}  // namespace trident::pipeline
