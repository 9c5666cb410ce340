// `trident export --in CKPT --out DIR --format hf`: Hugging Face GPT2LMHeadModel or
// LlamaForCausalLM files (model.safetensors + config.json) from a checkpoint of any layout.

#include <iostream>

#include "checkpoint/hf.h"     // export_hf
#include "checkpoint/index.h"  // open_checkpoint
#include "cli/args.h"
#include "cli/commands.h"
#include "parallel/agreement.h"  // run_agreed
#include "parallel/world.h"      // world_communicator

namespace trident::cli {

int cmd_export(const Args& args) {
  if (args.get("format", "hf") != "hf")
    throw UsageError("--format " + args.get("format") + " is not supported; use --format hf");
  const std::unique_ptr<Communicator> job = world_communicator();
  const int rank = job->rank();
  run_agreed(*job, [&] {
    if (rank != 0) return;
    const checkpoint::CheckpointIndex index = checkpoint::open_checkpoint(args.get("in"), "");
    checkpoint::export_hf(index, args.get("out"));
    std::cout << "exported " << index.dir << " (step " << index.step << ") to " << args.get("out")
              << "/model.safetensors and config.json\n";
  });
  return 0;
}

}  // namespace trident::cli
