// `trident export --in CKPT --out DIR --format hf`: Hugging Face GPT2LMHeadModel files
// (model.safetensors + config.json) from a checkpoint of any layout.

#include <iostream>

#include "checkpoint/hf.h"     // export_hf
#include "checkpoint/index.h"  // open_checkpoint
#include "cli/args.h"
#include "cli/commands.h"
#include "parallel/agreement.h"  // run_agreed
#include "parallel/world.h"      // world_communicator

namespace trident::cli {

namespace {

const CommandSpec kSpec{
    "export",
    "trident export --in CKPT --out DIR --format hf",
    "Writes DIR/model.safetensors and DIR/config.json that Hugging Face's GPT2LMHeadModel\n"
    "loads as is: its parameter names, Conv1D layout ([in, out]), fused QKV order (all q\n"
    "heads, then k, then v), float32, the vocabulary padding removed and the tied head\n"
    "left out. DIR must not exist (or be empty). One process does the work.",
    {{"in", "CKPT", "the checkpoint to export"},
     {"out", "DIR", "the directory to write"},
     {"format", "FORMAT", "hf (the only format)"}},
    0,
    0};

}  // namespace

int cmd_export(const Argv& argv) {
  const Args args = parse_args(kSpec, argv);
  if (args.help) {
    std::cout << help_text(kSpec);
    return 0;
  }
  if (!args.has("in") || !args.has("out")) throw UsageError("export needs --in CKPT and --out DIR");
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
