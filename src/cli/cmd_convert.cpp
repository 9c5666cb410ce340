// `trident convert --in CKPT --out DIR [--set parallel.tp=...]`: re-splits a checkpoint for
// another layout, one file per target rank (see checkpoint/convert.h).

#include <iostream>

#include "checkpoint/checkpoint.h"  // checkpoint_config
#include "checkpoint/convert.h"     // convert_checkpoint
#include "cli/args.h"
#include "cli/commands.h"
#include "config/config.h"
#include "parallel/agreement.h"  // run_agreed
#include "parallel/world.h"      // world_communicator

namespace trident::cli {

namespace {

const CommandSpec kSpec{
    "convert",
    "[mpirun -np N] trident convert --in CKPT --out DIR [--set section.key=value ...]",
    "Writes the checkpoint CKPT (a step directory, a directory with a `latest` file, or a\n"
    "Hugging Face directory) as a new checkpoint DIR laid out for the layout of CKPT's\n"
    "config with the --set overrides applied (parallel.dp, parallel.pp, parallel.tp,\n"
    "parallel.zero_stage, parallel.bucket_size): one file per target rank, named by its\n"
    "coordinates, holding exactly what that rank would save. Any number of processes can\n"
    "share the work. DIR must not exist.",
    {{"in", "CKPT", "the checkpoint to convert"}, {"out", "DIR", "the new checkpoint directory"}},
    0,
    0};

}  // namespace

int cmd_convert(const Argv& argv) {
  const Args args = parse_args(kSpec, argv);
  if (args.help) {
    std::cout << help_text(kSpec);
    return 0;
  }
  if (!args.has("in") || !args.has("out"))
    throw UsageError("convert needs --in CKPT and --out DIR");
  const std::unique_ptr<Communicator> job = world_communicator();
  const int rank = job->rank();
  TrainConfig target;
  run_agreed(*job,
             [&] { target = checkpoint_config(args.get("in"), "", args.sets, /*world_size=*/0); });
  const checkpoint::ConvertSummary s =
      checkpoint::convert_checkpoint(args.get("in"), "", target, args.get("out"), *job);
  const auto& p = target.parallel;
  if (rank == 0)
    std::cout << "converted " << args.get("in") << " to " << s.out << " for dp " << p.dp << " x pp "
              << p.pp << " x tp " << p.tp << ", ZeRO stage " << p.zero_stage << ": " << s.files
              << " files, " << s.bytes << " bytes\n";
  return 0;
}

}  // namespace trident::cli
