// The schedule checker: runs every stage's instruction list together as an event
// simulation, proves each send meets its receive without deadlock, and measures the
// in-flight micro-batches, the timeline and the pipeline bubble.
#pragma once

#include <string>   // std::string
#include <utility>  // std::pair
#include <vector>   // std::vector

#include "pipeline/schedule.h"  // Schedule, Instruction, Op

namespace trident::pipeline {

/// What check_schedules found. When `ok` is false, `error` says why and the other
/// fields hold what was measured up to the failure.
struct CheckReport {
  bool ok = false;
  /// Empty when ok; otherwise names the stage, instruction index and instruction
  /// (e.g. "stage 2, instruction 10 (RA2): ...").
  std::string error;
  /// Per stage: the most micro-batches forwarded but not yet backwarded at once.
  std::vector<int> max_in_flight;
  /// Idle stage-time over total stage-time (stages x makespan).
  double bubble_fraction = 0.0;
  /// Per stage: {start, end} of each Forward and Backward, in list order.
  std::vector<std::vector<std::pair<double, double>>> timeline;
  /// Time at which the last compute instruction of any stage ends.
  double makespan = 0.0;
};

/// Checks the schedules of all stages of one pipeline (per_stage[s] is stage s) for
/// one step of `micro_batches` micro-batches. Sends take no time and never block; a
/// receive waits for the matching send; each neighbour channel is FIFO per direction
/// and kind. A Forward costs `forward_cost`, a Backward `backward_cost`, and each half of
/// a split backward (BI, W) half of it. Chunks are virtual stages: chunk c of stage s is
/// virtual stage c * stages + s, and a chunk's compute costs what a whole stage's does,
/// which leaves the bubble fraction unchanged by the scale.
/// Throws std::invalid_argument for an empty pipeline, micro_batches < 1 or a cost
/// that is not positive; a wrong schedule is reported, not thrown.
CheckReport check_schedules(const std::vector<Schedule>& per_stage, int micro_batches,
                            double forward_cost = 1.0, double backward_cost = 2.0);

/// (p - 1) / (m + p - 1): the bubble of GPipe and 1F1B with equal stages.
double bubble_formula(int stages, int micro_batches);

/// (p - 1) / (v m + p - 1): the bubble of interleaved 1F1B with v chunks per stage.
double interleaved_bubble_formula(int stages, int micro_batches, int chunks);

/// ZB-H1's bubble (Qi et al.): (p - 1)(F + B - W) / (m (F + B + W) + (p - 1)(F + B - W)),
/// with B and W each half of `backward_cost`; (p - 1) / (3m + p - 1) when F = B = W.
double zb_h1_bubble_formula(int stages, int micro_batches, double forward_cost = 1.0,
                            double backward_cost = 2.0);

/// The bubble formula of `kind`, as the report and the benchmark compare against.
double schedule_bubble_formula(PipelineSchedule kind, int stages, int micro_batches, int chunks,
                               double forward_cost, double backward_cost);

}  // namespace trident::pipeline
