// `trident eval --checkpoint CKPT --data FILE --sequences K`: the mean next-token loss of a
// checkpoint's model over the first K windows of a token file, in any layout; one JSON line.

#include <cstdio>
#include <iostream>
#include <memory>

#include "checkpoint/checkpoint.h"  // checkpoint_config, load_model_weights
#include "checkpoint/evaluate.h"    // evaluate_token_file
#include "cli/args.h"
#include "cli/commands.h"
#include "config/config.h"
#include "models/gpt.h"                 // GptStage
#include "parallel/agreement.h"         // run_agreed
#include "parallel/parallel_context.h"  // ParallelContext
#include "parallel/world.h"             // world_communicator
#include "train/trainer.h"              // gpt_options

namespace trident::cli {

namespace {

const CommandSpec kSpec{
    "eval",
    "[mpirun -np N] trident eval --checkpoint CKPT --data FILE --sequences K [--seq-len T]\n"
    "                           [--micro-batch B] [--set section.key=value ...]",
    "Prints {\"loss\": L, \"tokens\": K*T}: the mean next-token cross-entropy of CKPT's model\n"
    "over the first K windows of the token file FILE, window i being tokens [i*T, i*T+T]\n"
    "(the first T are inputs, the last T targets). The model comes from the checkpoint's\n"
    "stored config, or from a Hugging Face config.json; T defaults to its model.seq_len.\n"
    "Runs on one rank or any layout: --set parallel.pp=2 --set parallel.tp=2 (dp is\n"
    "derived from the ranks); --set train.precision=fp64 to compute in float64.",
    {{"checkpoint", "CKPT", "trident checkpoint or Hugging Face directory"},
     {"data", "FILE", "token file (llm.c shard, Megatron dataset, raw uint16)"},
     {"sequences", "K", "number of windows"},
     {"seq-len", "T", "window length (default: model.seq_len)"},
     {"micro-batch", "B", "windows per forward (default 4)"}},
    0,
    0};

}  // namespace

int cmd_eval(const Argv& argv) {
  const Args args = parse_args(kSpec, argv);
  if (args.help) {
    std::cout << help_text(kSpec);
    return 0;
  }
  if (!args.has("checkpoint") || !args.has("data") || !args.has("sequences"))
    throw UsageError("eval needs --checkpoint CKPT, --data FILE and --sequences K");
  const long long K = args.get_int("sequences", 0);
  const long long B = args.get_int("micro-batch", 4);
  if (K < 1) throw UsageError("--sequences must be at least 1");
  if (B < 1) throw UsageError("--micro-batch must be at least 1");
  const std::unique_ptr<Communicator> job = world_communicator();
  const int world = job->size(), rank = job->rank();

  // The saving run's layout and batch do not apply: one rank unless --set says otherwise.
  std::vector<std::string> sets = {"parallel.dp=0",
                                   "parallel.pp=1",
                                   "parallel.tp=1",
                                   "parallel.zero_stage=0",
                                   "train.micro_batch_size=1",
                                   "train.global_batch_size=" + std::to_string(world)};
  sets.insert(sets.end(), args.sets.begin(), args.sets.end());
  const std::string path = args.get("checkpoint");
  TrainConfig config;
  run_agreed(*job, [&] { config = checkpoint_config(path, "", sets, world); });
  const long long T = args.get_int("seq-len", config.model.seq_len);

  const auto& p = config.parallel;
  ParallelContext ctx(*job, static_cast<int>(p.dp), static_cast<int>(p.pp), static_cast<int>(p.tp),
                      p.timeout_s);
  std::unique_ptr<GptStage> model;
  run_agreed(*job, [&] {
    model = std::make_unique<GptStage>(gpt_options(config), ctx.tp(), ctx.coord().pp,
                                       static_cast<int>(p.pp));
  });
  load_model_weights(*model, ctx, config, path, "");
  const checkpoint::EvalResult r =
      checkpoint::evaluate_token_file(*model, ctx, args.get("data"), K, T, B);
  if (rank == 0)
    std::printf("{\"loss\": %.17g, \"tokens\": %lld}\n", r.loss, static_cast<long long>(r.tokens));
  return 0;
}

}  // namespace trident::cli
