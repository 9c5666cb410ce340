// Muon's momentum in layout-free checkpoints, on 8 ranks (in the checkpoint job of
// test_checkpoint.cpp): a Muon run at dp2 x pp2 x tp2 with ZeRO 2, saved at step 5, resumes
// exactly in other layouts; a checkpoint of one optimizer is refused by the other unless
// optimizer.reset_states asks for fresh states.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>  // std::isfinite
#include <string>

#include "checkpoint/index.h"      // open_checkpoint
#include "checkpoint_test_util.h"  // expect_resume_matches
#include "mpi_test_util.h"         // shared_temp_dir, remove_shared
#include "parallel/agreement.h"    // JobError
#include "parity_harness.h"        // Layout, layout_config, train_steps, muon
#include "train/checkpointing.h"   // save_checkpoint, load_checkpoint of a Trainer
#include "zero/zero_optimizer.h"   // ZeroOptimizer

namespace trident::testing {
namespace {

constexpr int kSteps = 10;
constexpr int kSaveAt = 5;
const Layout kSource = muon({"dp2_pp2_tp2_zero2_1f1b_ckpt", 2, 2, 2, 2, "1f1b", true, 1});

TEST(CheckpointMuon, momentum_resumes_exactly_in_other_layouts) {
  const std::string dir = shared_temp_dir(MPI_COMM_WORLD, "trident_checkpoint_muon_");
  ParallelContext ctx(MPI_COMM_WORLD, kSource.dp, kSource.pp, kSource.tp, 120.0);
  const TrainConfig config = layout_config(kSource, kSteps);
  RunTrace want;
  std::string final_path, saved;
  {
    Trainer full(config, ctx);
    want = train_steps(full, kSteps);
    final_path = save_checkpoint(full, ctx, dir + "/full", 0);
  }
  {
    Trainer stopped(config, ctx);
    train_steps(stopped, kSaveAt);
    saved = save_checkpoint(stopped, ctx, dir + "/stopped", 0);
  }
  const checkpoint::CheckpointIndex final_state = checkpoint::open_checkpoint(final_path, "");
  EXPECT_EQ(final_state.optimizer.value("kind", ""), "muon");
  const Layout targets[] = {
      muon({"dp1_pp1_tp1", 1, 1, 1, 0, "1f1b", false, 2}),
      muon({"dp4_pp1_tp2_zero3", 4, 1, 2, 3, "1f1b", false, 1}),
      muon({"dp1_pp2_tp4_zero1_interleaved_v2",
            1,
            2,
            4,
            1,
            "interleaved-1f1b",
            false,
            2,
            "fp64",
            2000,
            {"parallel.virtual_stages=2"}}),
  };
  for (const Layout& target : targets)
    expect_resume_matches(target, saved, kSaveAt, kSteps, want.losses, final_state);
  remove_shared(MPI_COMM_WORLD, dir);
}

TEST(CheckpointMuon, the_other_optimizer_is_refused_unless_reset_states) {
  const std::string dir = shared_temp_dir(MPI_COMM_WORLD, "trident_checkpoint_muon_");
  ParallelContext ctx(MPI_COMM_WORLD, kSource.dp, kSource.pp, kSource.tp, 120.0);
  {
    Trainer muon_run(layout_config(kSource, kSteps), ctx);
    train_steps(muon_run, 2);
    save_checkpoint(muon_run, ctx, dir, 0);
  }
  Layout adamw = kSource;
  adamw.sets.clear();
  try {
    Trainer other(layout_config(adamw, kSteps), ctx);
    load_checkpoint(other, ctx, "latest", dir);
    ADD_FAILURE() << "an AdamW run loaded Muon's states";
  } catch (const JobError& e) {  // every rank's, with the input error's message
    EXPECT_TRUE(e.input_error());
    const std::string message = e.what();
    EXPECT_NE(message.find("optimizer.name = \"muon\""), std::string::npos) << message;
    EXPECT_NE(message.find("optimizer.reset_states = true"), std::string::npos) << message;
  }
  adamw.sets.push_back("optimizer.reset_states=true");
  Trainer reset(layout_config(adamw, kSteps), ctx);
  load_checkpoint(reset, ctx, "latest", dir);
  EXPECT_EQ(reset.completed_steps(), 2);         // the run goes on from its step
  EXPECT_EQ(reset.optimizer().step_count(), 0);  // with AdamW's bias correction afresh
  for (size_t i = 0; i < reset.optimizer().num_params(); ++i) {
    const ParamStateView v = reset.optimizer().param_state(i);
    if (v.length > 0) EXPECT_EQ(v.exp_avg.abs().max().item<double>(), 0.0) << "parameter " << i;
  }
  const RunTrace next = train_steps(reset, 1);
  EXPECT_TRUE(std::isfinite(next.losses[0]));
  remove_shared(MPI_COMM_WORLD, dir);
}

}  // namespace
}  // namespace trident::testing
