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
/// and kind. A Forward costs `forward_cost`, a Backward `backward_cost`.
/// Throws std::invalid_argument for an empty pipeline, micro_batches < 1 or a cost
/// that is not positive; a wrong schedule is reported, not thrown.
CheckReport check_schedules(const std::vector<Schedule>& per_stage, int micro_batches,
                            double forward_cost = 1.0, double backward_cost = 2.0);

/// (p - 1) / (m + p - 1): the bubble of GPipe and 1F1B with equal stages.
double bubble_formula(int stages, int micro_batches);

}  // namespace trident::pipeline
