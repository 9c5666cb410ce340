// Checkpoints of ZeRO stage 3 runs, on 8 ranks: a dp2 x pp2 x tp2 stage 3 run stopped
// after step 3 resumes bitwise in its own layout, and continues the uninterrupted run's
// losses to 1e-10 at dp 4 stage 1, at dp 4 x tp 2 stage 3 and in one process.
#include <ATen/ATen.h>    // at::equal
#include <gtest/gtest.h>  // TEST, EXPECT_*
#include <mpi.h>          // MPI_COMM_WORLD

#include <algorithm>  // std::max
#include <cstdio>     // std::printf
#include <string>

#include "checkpoint/index.h"           // CheckpointIndex, open_checkpoint
#include "checkpoint/reader.h"          // read_global_tensor
#include "checkpoint_test_util.h"       // same_state, expect_resume_matches
#include "models/gpt.h"                 // GptStage
#include "mpi_cases.h"                  // register_mpi_cases
#include "mpi_test_util.h"              // shared_temp_dir, remove_shared, relative_difference
#include "parallel/parallel_context.h"  // ParallelContext
#include "parallel/world.h"             // world_rank
#include "parity_harness.h"             // Layout, layout_config, train_steps
#include "train/checkpointing.h"        // save_checkpoint, load_checkpoint of a Trainer
#include "zero/zero_optimizer.h"        // ZeroOptimizer

namespace trident::testing {
namespace {

constexpr int kSteps = 6;
constexpr int kSaveAt = 3;
const Layout kSource{"dp2_pp2_tp2_zero3_1f1b_ckpt", 2, 2, 2, 3, "1f1b", true, 1};

// One job of 8 ranks for both (a start of 8 ranks costs about 4 s on two cores).
const bool kRegistered = register_mpi_cases({
    {"checkpoint_zero3_dp2_pp2_tp2_exact_resume_and_into_other_layouts", 8,
     "CheckpointZero3.resumes_bitwise:CheckpointZero3.resumes_in_other_layouts"},
});

TEST(CheckpointZero3, resumes_bitwise) {
  const std::string dir = shared_temp_dir(MPI_COMM_WORLD, "trident_zero3_checkpoint_");
  ParallelContext ctx(MPI_COMM_WORLD, kSource.dp, kSource.pp, kSource.tp, 120.0);
  const TrainConfig config = layout_config(kSource, kSteps);
  Trainer full(config, ctx);
  const RunTrace want = train_steps(full, kSteps);
  {
    Trainer first(config, ctx);
    train_steps(first, kSaveAt);
    save_checkpoint(first, ctx, dir, 0);
  }
  Trainer resumed(config, ctx);
  load_checkpoint(resumed, ctx, "latest", dir);
  EXPECT_EQ(resumed.completed_steps(), kSaveAt);
  const RunTrace got = train_steps(resumed, kSteps - kSaveAt);
  for (int s = 0; s < kSteps - kSaveAt; ++s) {
    EXPECT_EQ(got.losses[s], want.losses[kSaveAt + s]) << "step " << kSaveAt + s + 1;
    EXPECT_EQ(got.grad_norms[s], want.grad_norms[kSaveAt + s]) << "step " << kSaveAt + s + 1;
  }
  EXPECT_TRUE(same_state(resumed, full)) << "rank " << ctx.rank() << ": states differ";
  remove_shared(MPI_COMM_WORLD, dir);
}

TEST(CheckpointZero3, resumes_in_other_layouts) {
  const std::string dir = shared_temp_dir(MPI_COMM_WORLD, "trident_zero3_checkpoint_");
  RunTrace reference;
  std::string stopped_path;
  checkpoint::CheckpointIndex final_state;
  {
    ParallelContext ctx(MPI_COMM_WORLD, kSource.dp, kSource.pp, kSource.tp, 120.0);
    const TrainConfig config = layout_config(kSource, kSteps);
    {
      Trainer full(config, ctx);
      reference = train_steps(full, kSteps);
      final_state = checkpoint::open_checkpoint(save_checkpoint(full, ctx, dir + "/full", 0), "");
    }
    Trainer stopped(config, ctx);
    train_steps(stopped, kSaveAt);
    stopped_path = save_checkpoint(stopped, ctx, dir + "/stopped", 0);
  }
  // name, dp, pp, tp, zero, schedule, checkpointing, micro-batch size.
  const Layout targets[] = {
      {"dp4_zero1", 4, 1, 1, 1, "1f1b", false, 2},
      {"dp4_tp2_zero3", 4, 1, 2, 3, "1f1b", false, 1},
      {"dp1_pp1_tp1", 1, 1, 1, 0, "1f1b", false, 2},
  };
  for (const Layout& target : targets)
    expect_resume_matches(target, stopped_path, kSaveAt, kSteps, reference.losses, final_state);
  remove_shared(MPI_COMM_WORLD, dir);
}

}  // namespace
}  // namespace trident::testing
