// Dispatch of `trident SUBCOMMAND ...`, the job's start (MPI) for the commands that need it,
// and the one place where errors become messages and exit codes.
#include <cstdio>
#include <functional>  // std::function
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/input_error.h"  // InputError
#include "parallel/agreement.h"  // JobError
#include "parallel/world.h"      // world_rank, start_job, end_job, abort_job
#include "train/preemption.h"    // catch_preemption_early

namespace trident::cli {

namespace {

void print_usage(std::FILE* to) { std::fputs(overview_text(commands()).c_str(), to); }

/// Runs `start` (the job's start, or nothing), parses the command line against `command`'s
/// declared options and runs it (or prints its help). The one place where errors become
/// messages and exit codes: 2 for bad input (an InputError, or a JobError that carries
/// one), 1 for a failure during the run.
int run_guarded(const Command& command, const Argv& argv, const std::function<void()>& start) {
  const char* name = command.spec.name.c_str();
  try {
    if (start) start();
    const Args args = parse_args(command.spec, argv);
    if (args.help) {
      if (world_rank() == 0) std::fputs(help_text(command.spec).c_str(), stdout);
      return 0;
    }
    return command.run(args);
  } catch (const UsageError& e) {
    if (world_rank() == 0) std::fprintf(stderr, "trident %s: %s\n", name, e.what());
    return 2;
  } catch (const JobError& e) {  // agreed by every rank: rank 0 speaks for all
    if (world_rank() == 0) std::fprintf(stderr, "trident: error: %s\n", e.what());
    return e.input_error() ? 2 : 1;
  } catch (const InputError& e) {
    // Outside run_agreed nothing says the other ranks know: on one rank, or on a bad input
    // every rank meets alike (a config file), report it; in a job, end every rank.
    if (world_size() == 1) {
      std::fprintf(stderr, "trident: error: %s\n", e.what());
      return 2;
    }
    std::fprintf(stderr, "trident: error: rank %d: %s\n", world_rank(), e.what());
    std::fflush(stderr);
    abort_job(2);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trident: error: rank %d: %s\n", world_rank(), e.what());
    std::fflush(stderr);
    abort_job(1);
    return 1;
  }
}

}  // namespace

int run_main(int argc, char** argv) {
  Argv all(argv + 1, argv + argc);
  if (all.empty() || all[0] == "--help" || all[0] == "-h" || all[0] == "help") {
    print_usage(all.empty() ? stderr : stdout);
    return all.empty() ? 2 : 0;
  }
  const Command* command = find_command(commands(), all[0]);
  if (!command) {
    std::fprintf(stderr, "trident: unknown subcommand '%s'\n\n", all[0].c_str());
    print_usage(stderr);
    return 2;
  }
  const Argv args(all.begin() + 1, all.end());
  if (!command->uses_mpi) return run_guarded(*command, args, nullptr);

  // Before MPI starts: a signal during the start-up is then flagged, not fatal.
  if (command->preemptible) catch_preemption_early();
  const int code = run_guarded(*command, args, [&] { start_job(&argc, &argv); });
  end_job();
  return code;
}

}  // namespace trident::cli
