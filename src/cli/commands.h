// The subcommands of `trident`: each runs on its already-parsed arguments and returns the
// exit code. commands() is the table run_main dispatches with; run_main turns errors into
// messages and exit codes.
#pragma once
#include <string>
#include <vector>

#include "cli/args.h"  // Args, Command

namespace trident::cli {

using Argv = std::vector<std::string>;

int cmd_check(const Args& args);
int cmd_schedule(const Args& args);
int cmd_train(const Args& args);
int cmd_convert(const Args& args);
int cmd_inspect(const Args& args);
int cmd_export(const Args& args);
int cmd_eval(const Args& args);
int cmd_plan(const Args& args);
int cmd_calibrate(const Args& args);
int cmd_prepare_data(const Args& args);
int cmd_batch(const Args& args);

/// Every subcommand, in the order `trident --help` lists them.
const std::vector<Command>& commands();

int run_main(int argc, char** argv);

}  // namespace trident::cli
