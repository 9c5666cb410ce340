// Dispatch of `trident SUBCOMMAND ...`, MPI set-up for the commands that need it, and the
// one place where errors become messages and exit codes.
#include <mpi.h>

#include <cstdio>
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/config.h"
#include "parallel/agreement.h"  // JobError
#include "parallel/world.h"      // world_rank, world_size, abort_job

namespace trident::cli {

namespace {

struct Subcommand {
  const char* name;
  int (*run)(const Argv&);
  bool uses_mpi;  // launched under mpirun; MPI is initialised around it
  const char* summary;
};

const Subcommand kSubcommands[] = {
    {"train", cmd_train, true, "train a model from a TOML config (under mpirun for many ranks)"},
    {"check", cmd_check, false, "validate a config and print the resolved config and layout"},
    {"schedule", cmd_schedule, false, "print and check a pipeline schedule"},
    {"convert", cmd_convert, true, "re-split a checkpoint for another layout (one file per rank)"},
    {"inspect", cmd_inspect, false, "print a checkpoint's step, layout, tensors and sizes"},
    {"export", cmd_export, true, "write a checkpoint as Hugging Face GPT-2 files"},
    {"eval", cmd_eval, true, "mean next-token loss of a checkpoint on a token file, any layout"},
    {"plan", cmd_plan, false,
     "predict memory and step time of every layout on N devices, rank them"},
    {"calibrate", cmd_calibrate, true,
     "measure this machine's matmul rate and MPI links, write a cluster file"},
    {"prepare-data", cmd_prepare_data, false,
     "tokenise text files into an llm.c token file (byte or GPT-2 BPE)"},
};

void print_usage(std::FILE* to) {
  std::fprintf(to, "usage: trident SUBCOMMAND [options]   (trident SUBCOMMAND --help)\n\n");
  for (const auto& s : kSubcommands) std::fprintf(to, "  %-13s %s\n", s.name, s.summary);
}

/// Runs one subcommand and maps its errors to exit codes: 2 for bad input (usage, config,
/// data, checkpoint), 1 for a failure during the run.
int run_guarded(const Subcommand& sub, const Argv& args) {
  try {
    return sub.run(args);
  } catch (const UsageError& e) {
    if (world_rank() == 0) std::fprintf(stderr, "trident %s: %s\n", sub.name, e.what());
    return 2;
  } catch (const JobError& e) {
    if (world_rank() == 0) std::fprintf(stderr, "trident: error: %s\n", e.what());
    return 2;
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "trident: error: %s\n", e.what());
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
  const Subcommand* sub = nullptr;
  for (const auto& s : kSubcommands)
    if (all[0] == s.name) sub = &s;
  if (!sub) {
    std::fprintf(stderr, "trident: unknown subcommand '%s'\n\n", all[0].c_str());
    print_usage(stderr);
    return 2;
  }
  const Argv args(all.begin() + 1, all.end());
  if (!sub->uses_mpi) return run_guarded(*sub, args);

  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const int code = run_guarded(*sub, args);
  MPI_Finalize();
  return code;
}

}  // namespace trident::cli
