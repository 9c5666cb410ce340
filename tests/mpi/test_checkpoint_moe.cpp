// Checkpoints of a Mixture-of-Experts Llama trained with expert parallelism, on 4 ranks:
// saved at dp4 x ep4 (each rank holding one expert of each layer) and resumed at ep 4
// (bitwise), at ep 2, at ep 1, on one process, and through `convert` at dp2 x ep2; and the
// ZeRO ranges conversion computes for the experts' buffers (cut over the expert-dp group)
// matching the optimizer's.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>  // std::max
#include <cmath>      // std::abs

#include "checkpoint/convert.h"    // convert_checkpoint
#include "checkpoint/index.h"      // open_checkpoint
#include "checkpoint/ownership.h"  // zero_owned_ranges
#include "checkpoint_test_util.h"  // same_state, expect_resume_matches, first_ranks
#include "mpi_cases.h"             // register_mpi_cases
#include "mpi_test_util.h"         // shared_temp_dir, remove_shared
#include "parallel/world.h"        // world_communicator
#include "parity_harness.h"        // moe, ep, layout_config, train_steps
#include "train/checkpointing.h"   // save_checkpoint, load_checkpoint of a Trainer
#include "zero/zero_optimizer.h"   // ZeroOptimizer

namespace trident::testing {
namespace {

constexpr int kSteps = 6;
constexpr int kSaveAt = 3;
// The sigmoid router: its balancing biases are state the checkpoint must carry.
const Layout kSource =
    moe(ep({"dp4_ep4_zero2", 4, 1, 1, 2, "1f1b", false, 1}, 4), {"shared", "z", "sigmoid"});

const bool kRegistered = register_mpi_cases({
    {"checkpoint_moe_ep4_resume_and_convert", 4, "CheckpointMoe.*"},
});

/// `l` with kSource's model.
Layout same_model(const Layout& l) { return moe(l, {"shared", "z", "sigmoid"}); }

TEST(CheckpointMoe, ep4_resumes_bitwise_and_at_ep2_ep1_one_process_and_converted) {
  const std::string dir = shared_temp_dir(MPI_COMM_WORLD, "trident_checkpoint_moe_");
  const TrainConfig config = layout_config(kSource, kSteps);
  RunTrace want;
  checkpoint::CheckpointIndex final_state;
  std::string stopped;
  {
    ParallelContext ctx(MPI_COMM_WORLD, kSource.dp, kSource.pp, kSource.tp, 120.0, kSource.ep);
    Trainer full(config, ctx);
    want = train_steps(full, kSteps);
    // The biases moved: 4 MoE layers, each expert's by a multiple of the rate.
    ASSERT_EQ(full.progress().router_bias.size(), 4u);
    double moved = 0;
    for (const auto& [layer, bias] : full.progress().router_bias)
      for (double b : bias) moved = std::max(moved, std::abs(b));
    EXPECT_GT(moved, 0.0);
    final_state = checkpoint::open_checkpoint(save_checkpoint(full, ctx, dir + "/full", 0), "");
    {
      Trainer first(config, ctx);
      train_steps(first, kSaveAt);
      stopped = save_checkpoint(first, ctx, dir + "/stopped", 0);
    }
    // The same layout: bit for bit.
    Trainer resumed(config, ctx);
    load_checkpoint(resumed, ctx, stopped, "");
    const RunTrace got = train_steps(resumed, kSteps - kSaveAt);
    for (int s = 0; s < kSteps - kSaveAt; ++s)
      EXPECT_EQ(got.losses[s], want.losses[kSaveAt + s]) << "step " << kSaveAt + s + 1;
    EXPECT_TRUE(same_state(resumed, full)) << "rank " << ctx.rank() << ": the states differ";
  }
  Layout targets[] = {
      same_model(ep({"dp4_ep2_zero1", 4, 1, 1, 1, "1f1b", false, 1}, 2)),
      same_model({"dp4_ep1_zero3", 4, 1, 1, 3, "1f1b", false, 1}),
      same_model(ep({"dp2_ep2_tp2_zero0", 2, 1, 2, 0, "1f1b", false, 2}, 2)),
      same_model({"dp1_pp1_tp1", 1, 1, 1, 0, "1f1b", false, 2}),
  };
  for (const Layout& target : targets)
    expect_resume_matches(target, stopped, kSaveAt, kSteps, want.losses, final_state, 1e-15);

  // convert into dp2 x ep2 (one expert pair per rank), then resume on 2 ranks.
  const Layout converted =
      same_model(ep({"dp2_ep2_zero2_converted", 2, 1, 1, 2, "1f1b", false, 2}, 2));
  const auto world = world_communicator();
  checkpoint::convert_checkpoint(stopped, "", layout_config(converted, kSteps), dir + "/converted",
                                 *world);
  expect_resume_matches(converted, dir + "/converted", kSaveAt, kSteps, want.losses, final_state,
                        1e-15);
  remove_shared(MPI_COMM_WORLD, dir);
}

// The ranges convert computes for a target rank are those the optimizer reports, the
// experts' buffers cut over dp / ep ranks.
TEST(CheckpointMoe, zero_ranges_of_the_experts_match_the_optimizer) {
  const Layout layouts[] = {
      same_model(ep({"dp4_ep2_zero1", 4, 1, 1, 1, "1f1b", false, 1}, 2)),
      same_model(ep({"dp4_ep2_zero2", 4, 1, 1, 2, "1f1b", false, 1}, 2)),
      same_model(ep({"dp4_ep2_zero3", 4, 1, 1, 3, "1f1b", false, 1}, 2)),
      same_model(ep({"dp4_ep4_zero0", 4, 1, 1, 0, "1f1b", false, 1}, 4)),
  };
  for (const Layout& l : layouts) {
    ParallelContext ctx(MPI_COMM_WORLD, l.dp, l.pp, l.tp, 120.0, l.ep);
    const TrainConfig config = layout_config(l, kSteps);
    Trainer trainer(config, ctx);
    const auto& params = trainer.model().params().params();
    const auto ranges = checkpoint::zero_owned_ranges(params, config.parallel, ctx.coord().dp,
                                                      /*muon=*/false);
    int experts = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      experts += params[i].spec.expert ? 1 : 0;
      const ParamStateView v = trainer.optimizer().param_state(i);
      EXPECT_EQ(ranges[i].length, v.length) << l.name << " " << params[i].spec.name;
      if (v.length > 0) EXPECT_EQ(ranges[i].start, v.start) << l.name << " " << params[i].spec.name;
    }
    // 4 layers of 4 experts, 3 matrices each, shared out over ep.
    EXPECT_EQ(experts, 4 * 4 * 3 / l.ep) << l.name;
  }
}

}  // namespace
}  // namespace trident::testing
