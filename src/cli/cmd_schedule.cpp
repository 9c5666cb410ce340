// `trident schedule`: prints and checks a pipeline schedule (see pipeline/schedule_cli.h).
#include <iostream>

#include "cli/commands.h"
#include "pipeline/schedule_cli.h"

namespace trident::cli {

int cmd_schedule(const Argv& args) {
  return pipeline::run_schedule_command(args, std::cout, std::cerr);
}

}  // namespace trident::cli
