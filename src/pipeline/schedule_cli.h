// `trident schedule`: prints a pipeline schedule per stage, its timeline, in-flight
// micro-batches and bubble, and the checker's verdict.
#pragma once

#include <iosfwd>  // std::ostream
#include <string>  // std::string
#include <vector>  // std::vector

#include "pipeline/schedule.h"          // Schedule
#include "pipeline/schedule_checker.h"  // CheckReport

namespace trident::pipeline {

/// Runs `trident schedule` with `args`, the arguments after the word "schedule":
///   --pp P --micro-batches M [--schedule 1f1b|gpipe] [--full]
///   [--forward-cost F] [--backward-cost B] [--help]
/// Returns 0 when the checker accepts the schedule, 1 when it rejects it, and 2 for
/// bad arguments (with a message naming the argument on `err`).
int run_schedule_command(const std::vector<std::string>& args, std::ostream& out,
                         std::ostream& err);

/// The text printed by `trident schedule --help`.
std::string schedule_usage();

/// One row per stage: each Forward/Backward drawn as its mnemonic (F3, B3) padded to
/// its duration, '.' where the stage is idle. A forward-cost unit of time is as many
/// columns as the widest mnemonic.
std::string render_timeline(const std::vector<Schedule>& per_stage, const CheckReport& report,
                            double forward_cost);

}  // namespace trident::pipeline
