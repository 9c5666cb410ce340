// `trident eval --checkpoint CKPT --data FILE --sequences K`: the mean next-token loss of a
// checkpoint's model over the first K windows of a token file, in any layout; one JSON line.

#include <cstdio>
#include <iostream>
#include <memory>

#include "checkpoint/checkpoint.h"  // checkpoint_config, load_model_weights
#include "cli/args.h"
#include "cli/commands.h"
#include "config/config.h"
#include "models/model_config.h"        // make_model_stage, run_device
#include "models/model_stage.h"         // ModelStage
#include "parallel/agreement.h"         // run_agreed
#include "parallel/parallel_context.h"  // ParallelContext
#include "parallel/world.h"             // world_communicator, local_rank
#include "train/evaluate.h"             // evaluate_token_file

namespace trident::cli {

int cmd_eval(const Args& args) {
  const long long K = args.get_int("sequences", 0);
  const long long B = args.get_int("micro-batch", 4);
  if (K < 1) throw UsageError("--sequences must be at least 1");
  if (B < 1) throw UsageError("--micro-batch must be at least 1");
  const std::unique_ptr<Communicator> job = world_communicator();
  const int world = job->size(), rank = job->rank();

  // The saving run's layout and batch do not apply: dp over every rank unless --set says
  // otherwise.
  std::vector<std::string> sets = {"train.micro_batch_size=1",
                                   "train.global_batch_size=" + std::to_string(world)};
  sets.insert(sets.end(), args.sets.begin(), args.sets.end());
  const std::string path = args.get("checkpoint");
  TrainConfig config;
  run_agreed(*job, [&] {
    config = checkpoint_config(path, "", sets, world, SavedParallel::kNone);
    check_device(config.train.device);
  });
  const long long T = args.get_int("seq-len", config.model.seq_len);

  const auto& p = config.parallel;
  ParallelContext ctx(*job, static_cast<int>(p.dp), static_cast<int>(p.pp), static_cast<int>(p.tp),
                      p.timeout_s, run_device(config.train.device, local_rank()),
                      static_cast<int>(p.ep));
  std::unique_ptr<ModelStage> model;
  run_agreed(*job, [&] {
    model = make_model_stage(config, ctx.tp(), ctx.coord().pp, static_cast<int>(p.pp), ctx.device(),
                             false, &ctx.ep());
  });
  load_model_weights(*model, ctx, config, path, "");
  const EvalResult r = evaluate_token_file(*model, ctx, args.get("data"), K, T, B);
  if (rank == 0)
    std::printf("{\"loss\": %.17g, \"tokens\": %lld}\n", r.loss, static_cast<long long>(r.tokens));
  return 0;
}

}  // namespace trident::cli
