// The subcommands of `trident`: each takes its arguments (after the subcommand name) and
// returns the exit code. run_main dispatches and turns errors into messages and exit codes.
#pragma once
#include <string>
#include <vector>

namespace trident::cli {

using Argv = std::vector<std::string>;

int cmd_check(const Argv& args);
int cmd_schedule(const Argv& args);
int cmd_train(const Argv& args);
int cmd_convert(const Argv& args);
int cmd_inspect(const Argv& args);
int cmd_export(const Argv& args);
int cmd_eval(const Argv& args);
int cmd_plan(const Argv& args);
int cmd_calibrate(const Argv& args);
int cmd_prepare_data(const Argv& args);

int run_main(int argc, char** argv);

}  // namespace trident::cli
