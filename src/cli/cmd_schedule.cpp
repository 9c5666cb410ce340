// `trident schedule`: prints and checks a pipeline schedule (the report is
// pipeline/schedule_cli.h; the command line is declared in the command table).
#include <iostream>   // std::cout
#include <stdexcept>  // std::invalid_argument

#include "cli/args.h"               // Args, UsageError
#include "cli/commands.h"           // cmd_schedule
#include "pipeline/schedule_cli.h"  // print_schedule_report

namespace trident::cli {

int cmd_schedule(const Args& args) {
  pipeline::ScheduleReportOptions options;
  options.pp = args.get_positive_int("pp", 1);
  options.micro_batches = args.get_positive_int("micro-batches", 1);
  options.schedule = args.get("schedule", "1f1b");
  options.virtual_stages = args.get_positive_int("virtual-stages", 1);
  options.full = args.has("full");
  options.forward_cost = args.get_positive_double("forward-cost", 1.0);
  options.backward_cost = args.get_positive_double("backward-cost", 2.0);
  bool ok = false;
  try {
    ok = pipeline::print_schedule_report(options, std::cout);
  } catch (const std::invalid_argument& e) {  // a schedule that cannot be made: bad input
    throw UsageError(e.what());
  }
  return ok ? 0 : 1;
}

}  // namespace trident::cli
