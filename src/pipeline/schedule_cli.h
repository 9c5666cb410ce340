// The report `trident schedule` prints: a pipeline schedule per stage, its timeline,
// in-flight micro-batches and bubble, and the checker's verdict.
#pragma once

#include <iosfwd>  // std::ostream
#include <string>  // std::string
#include <vector>  // std::vector

#include "pipeline/schedule.h"          // Schedule
#include "pipeline/schedule_checker.h"  // CheckReport

namespace trident::pipeline {

/// What `trident schedule` prints: the schedule, the stages and micro-batches, and the
/// cost model of the timeline.
struct ScheduleReportOptions {
  int pp = 1;                     // pipeline stages, >= 1
  int micro_batches = 1;          // per optimizer step, >= 1
  std::string schedule = "1f1b";  // as parallel.schedule names it
  bool full = false;              // also every instruction, sends and receives included
  double forward_cost = 1.0;
  double backward_cost = 2.0;
  int virtual_stages = 1;  // model chunks per stage (interleaved-1f1b), >= 1
};

/// Prints the report of `options` to `out`: the compute order of every stage (with --full
/// every instruction), the timeline, the in-flight micro-batches, the bubble against
/// (p-1)/(m+p-1) and the checker's verdict. Returns whether the checker accepts the
/// schedules. Throws std::invalid_argument, before printing, for a schedule that cannot
/// be made (an unknown name, a stage count below 1).
bool print_schedule_report(const ScheduleReportOptions& options, std::ostream& out);

/// One row per stage: each computing instruction drawn as its mnemonic (F3, B3, BI3, W3,
/// F3c1) padded to its duration, '.' where the stage is idle. A forward-cost unit of time
/// is as many columns as the widest mnemonic (timeline_unit).
/// Columns per forward-cost unit in render_timeline: the widest compute mnemonic.
int timeline_unit(const std::vector<Schedule>& per_stage);

std::string render_timeline(const std::vector<Schedule>& per_stage, const CheckReport& report,
                            double forward_cost);

}  // namespace trident::pipeline
