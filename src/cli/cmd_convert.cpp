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

int cmd_convert(const Args& args) {
  const std::unique_ptr<Communicator> job = world_communicator();
  const int rank = job->rank();
  TrainConfig target;
  run_agreed(*job, [&] {
    target = checkpoint_config(args.get("in"), "", args.sets, /*world_size=*/0,
                               SavedParallel::kStorageLayout);
  });
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
