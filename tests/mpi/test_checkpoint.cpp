// Checkpoints across layouts, on 8 ranks: exact (bitwise) resume in fp64 at dp2 x pp2 x tp2
// with ZeRO-2, 1F1B and activation checkpointing; resuming that checkpoint at other layouts
// (on the world, and on MPI_COMM_SELF for 1 x 1 x 1); `convert` output loading and
// continuing identically, A -> B -> A giving back identical tensors; and the ZeRO ranges
// computed for conversion matching the optimizer's.
#include <ATen/ATen.h>  // at::equal
#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>  // std::filesystem::exists
#include <memory>      // std::unique_ptr

#include "checkpoint/convert.h"    // convert_checkpoint
#include "checkpoint/index.h"      // open_checkpoint
#include "checkpoint/ownership.h"  // zero_owned_ranges
#include "checkpoint/reader.h"     // read_global_tensor
#include "checkpoint_test_util.h"  // same_state, max_difference_from, expect_resume_matches
#include "models/gpt.h"            // GptStage
#include "mpi_cases.h"             // register_mpi_cases
#include "mpi_test_util.h"         // shared_temp_dir, remove_shared
#include "parallel/world.h"        // world_communicator
#include "parity_harness.h"        // Layout, layout_config, train_steps
#include "train/checkpointing.h"   // save_checkpoint, load_checkpoint of a Trainer
#include "zero/muon.h"             // is_muon_matrix
#include "zero/zero_optimizer.h"   // ZeroOptimizer

namespace trident::testing {
namespace {

constexpr int kSteps = 10;
constexpr int kSaveAt = 5;
const Layout kSource{"dp2_pp2_tp2_zero2_1f1b_ckpt", 2, 2, 2, 2, "1f1b", true, 1};

// One job of 8 ranks for the four: a start of 8 ranks costs about 4 s on two cores, as
// long as most of these tests' own work.
const bool kRegistered = register_mpi_cases({
    {"checkpoint_dp2_pp2_tp2_resume_into_layouts_convert_and_ownership", 8,
     "CheckpointResume.dp2_pp2_tp2_zero2_1f1b_ckpt_fp64_is_bitwise:"
     "CheckpointResume.dp2_pp2_tp2_zero2_into_other_layouts:CheckpointConvert.*:"
     "CheckpointOwnership.*:CheckpointMuon.*"},
});

/// The uninterrupted 8-rank run: its losses, and its final state saved in `dir`/full.
struct Reference {
  RunTrace trace;
  std::string saved_at_5;  // the checkpoint of a run stopped after step 5
  checkpoint::CheckpointIndex final_state;
};

Reference run_source(const std::string& dir) {
  Reference r;
  ParallelContext ctx(MPI_COMM_WORLD, kSource.dp, kSource.pp, kSource.tp, 120.0);
  const TrainConfig config = layout_config(kSource, kSteps);
  {
    Trainer full(config, ctx);
    r.trace = train_steps(full, kSteps);
    const std::string path = save_checkpoint(full, ctx, dir + "/full", 0);
    r.final_state = checkpoint::open_checkpoint(path, "");
  }
  Trainer stopped(config, ctx);
  train_steps(stopped, kSaveAt);
  r.saved_at_5 = save_checkpoint(stopped, ctx, dir + "/stopped", 0);
  return r;
}

TEST(CheckpointResume, dp2_pp2_tp2_zero2_1f1b_ckpt_fp64_is_bitwise) {
  const std::string dir = shared_temp_dir(MPI_COMM_WORLD, "trident_checkpoint_test_");
  ParallelContext ctx(MPI_COMM_WORLD, kSource.dp, kSource.pp, kSource.tp, 120.0);
  const TrainConfig config = layout_config(kSource, kSteps);

  Trainer full(config, ctx);
  const RunTrace want = train_steps(full, kSteps);
  {
    Trainer first(config, ctx);
    train_steps(first, kSaveAt);
    save_checkpoint(first, ctx, dir, 0);
  }  // the first run is gone: only the files remain
  Trainer resumed(config, ctx);
  load_checkpoint(resumed, ctx, "latest", dir);
  EXPECT_EQ(resumed.completed_steps(), kSaveAt);
  EXPECT_EQ(resumed.optimizer().step_count(), kSaveAt);
  const RunTrace got = train_steps(resumed, kSteps - kSaveAt);
  for (int s = 0; s < kSteps - kSaveAt; ++s) {
    EXPECT_EQ(got.losses[s], want.losses[kSaveAt + s]) << "step " << kSaveAt + s + 1;
    EXPECT_EQ(got.grad_norms[s], want.grad_norms[kSaveAt + s]) << "step " << kSaveAt + s + 1;
  }
  EXPECT_TRUE(same_state(resumed, full))
      << "rank " << ctx.rank() << ": final weights or optimizer states differ";
  remove_shared(MPI_COMM_WORLD, dir);
}

TEST(CheckpointResume, dp2_pp2_tp2_zero2_into_other_layouts) {
  const std::string dir = shared_temp_dir(MPI_COMM_WORLD, "trident_checkpoint_test_");
  const Reference ref = run_source(dir);
  // name, dp, pp, tp, zero, schedule, checkpointing, micro-batch size.
  const Layout targets[] = {
      {"dp1_pp4_tp2_zero1", 1, 4, 2, 1, "1f1b", true, 2},
      {"dp4_pp1_tp2_zero2", 4, 1, 2, 2, "1f1b", false, 1},
      {"dp1_pp2_tp2_zero0_on_4_ranks", 1, 2, 2, 0, "gpipe", false, 4},
      {"dp1_pp1_tp1", 1, 1, 1, 0, "1f1b", false, 2},
      // Two model chunks per stage: each chunk reads its layers' slices by global name.
      {"dp2_pp2_tp2_zero2_interleaved_v2",
       2,
       2,
       2,
       2,
       "interleaved-1f1b",
       false,
       1,
       "fp64",
       2000,
       {"parallel.virtual_stages=2"}},
      // Sequence parallelism and selective recomputation change no parameter: the same
      // checkpoint resumes into them.
      {"dp2_pp2_tp2_zero3_sp_selective",
       2,
       2,
       2,
       3,
       "1f1b",
       false,
       1,
       "fp64",
       2000,
       {"parallel.sequence_parallel=true", "parallel.activation_checkpointing=selective"}},
      // Context parallelism: the states sharded over dp x cp ranks, each sequence split.
      cp({"dp1_cp2_pp2_tp2_zero2", 1, 2, 2, 2, "1f1b", false, 2}, 2),
      cp({"dp2_cp4_zero3", 2, 1, 1, 3, "1f1b", false, 1}, 4),
  };
  for (const Layout& target : targets)
    expect_resume_matches(target, ref.saved_at_5, kSaveAt, kSteps, ref.trace.losses,
                          ref.final_state);
  remove_shared(MPI_COMM_WORLD, dir);
}

TEST(CheckpointConvert, dp2_pp2_tp2_zero2_to_dp4_pp1_tp2_and_back) {
  const std::string dir = shared_temp_dir(MPI_COMM_WORLD, "trident_checkpoint_test_");
  const Reference ref = run_source(dir);
  const Layout b{"dp4_pp1_tp2_zero2", 4, 1, 2, 2, "1f1b", false, 1};
  const TrainConfig config_b = layout_config(b, kSteps);
  const auto to_b = checkpoint::convert_checkpoint(ref.saved_at_5, "", config_b, dir + "/b",
                                                   *world_communicator());
  EXPECT_EQ(to_b.files, 8);  // every target rank holds states in ZeRO-2
  EXPECT_TRUE(std::filesystem::exists(dir + "/b/slices-dp3-pp0-tp1.safetensors"));

  // The converted checkpoint continues exactly as the original loaded in layout B.
  ParallelContext ctx(MPI_COMM_WORLD, b.dp, b.pp, b.tp, 120.0);
  Trainer from_converted(config_b, ctx), from_original(config_b, ctx);
  load_checkpoint(from_converted, ctx, dir + "/b", "");
  load_checkpoint(from_original, ctx, ref.saved_at_5, "");
  EXPECT_TRUE(same_state(from_converted, from_original)) << "rank " << ctx.rank();
  const RunTrace conv = train_steps(from_converted, kSteps - kSaveAt);
  const RunTrace orig = train_steps(from_original, kSteps - kSaveAt);
  for (int s = 0; s < kSteps - kSaveAt; ++s) {
    EXPECT_EQ(conv.losses[s], orig.losses[s]) << "step " << kSaveAt + s + 1;
    EXPECT_LE(relative_difference(conv.losses[s], ref.trace.losses[kSaveAt + s]), 1e-10);
  }
  EXPECT_TRUE(same_state(from_converted, from_original)) << "rank " << ctx.rank();

  // B -> A: the same tensors, the same slices, byte-identical files.
  const auto back = checkpoint::convert_checkpoint(dir + "/b", "", layout_config(kSource, kSteps),
                                                   dir + "/a", *world_communicator());
  EXPECT_EQ(back.files, 8);
  const checkpoint::CheckpointIndex a = checkpoint::open_checkpoint(ref.saved_at_5, "");
  const checkpoint::CheckpointIndex a2 = checkpoint::open_checkpoint(dir + "/a", "");
  ASSERT_EQ(a.tensors.size(), a2.tensors.size());
  int checked = 0;
  for (const auto& [name, info] : a.tensors) {
    ASSERT_TRUE(a2.tensors.count(name)) << name;
    const auto& slices = a2.tensors.at(name).slices;
    ASSERT_EQ(info.slices.size(), slices.size()) << name;
    for (size_t k = 0; k < slices.size(); ++k) {
      EXPECT_EQ(info.slices[k].file, slices[k].file) << name;
      EXPECT_TRUE(info.slices[k].box == slices[k].box) << name;
    }
    // Ranks share the tensors to read in full.
    if (checked++ % 8 != ctx.rank()) continue;
    EXPECT_TRUE(at::equal(checkpoint::read_global_tensor(a, name),
                          checkpoint::read_global_tensor(a2, name)))
        << name;
  }
  for (const auto& [file, info] : a.files) {
    ASSERT_TRUE(a2.files.count(file)) << file;
    EXPECT_EQ(a2.files.at(file).xxh64, info.xxh64) << file;
  }
  EXPECT_EQ(a2.step, kSaveAt);
  EXPECT_EQ(a2.optimizer.at("step_count").get<int64_t>(), kSaveAt);
  remove_shared(MPI_COMM_WORLD, dir);
}

// The ranges convert computes for a target rank are those the optimizer reports.
TEST(CheckpointOwnership, zero_ranges_match_the_optimizer) {
  const Layout layouts[] = {
      {"dp2_pp2_tp2_zero1", 2, 2, 2, 1, "1f1b", false, 1},
      {"dp2_pp2_tp2_zero2", 2, 2, 2, 2, "1f1b", false, 1},
      {"dp4_pp1_tp2_zero0", 4, 1, 2, 0, "1f1b", false, 1},
      {"dp8_zero2", 8, 1, 1, 2, "1f1b", false, 1},
      {"dp2_pp2_tp2_zero3", 2, 2, 2, 3, "1f1b", false, 1},
      {"dp8_zero3", 8, 1, 1, 3, "1f1b", false, 1},
      cp({"dp2_cp2_tp2_zero2", 2, 1, 2, 2, "1f1b", false, 1}, 2),
      cp({"dp1_cp4_pp2_zero3", 1, 2, 1, 3, "1f1b", false, 2}, 4),
      // Muon's matrices in buffers of their own, which cut them differently.
      muon({"dp8_zero2", 8, 1, 1, 2, "1f1b", false, 1}),
      muon({"dp2_pp2_tp2_zero3", 2, 2, 2, 3, "1f1b", false, 1}),
  };
  for (const Layout& l : layouts) {
    ParallelContext ctx(MPI_COMM_WORLD, l.dp, l.pp, l.tp, 120.0, l.ep, l.cp);
    const TrainConfig config = layout_config(l, kSteps);
    Trainer trainer(config, ctx);
    const auto& params = trainer.model().params().params();
    const bool muon = config.optimizer.name == OptimizerName::kMuon;
    const auto ranges =
        checkpoint::zero_owned_ranges(params, config.parallel, ctx.coord().dp, muon);
    for (size_t i = 0; i < params.size(); ++i) {
      const ParamStateView v = trainer.optimizer().param_state(i);
      EXPECT_EQ(ranges[i].length, v.length) << l.name << " " << params[i].spec.name;
      if (v.length > 0) EXPECT_EQ(ranges[i].start, v.start) << l.name << " " << params[i].spec.name;
      // Muon keeps one state of its matrices, AdamW two of everything else.
      EXPECT_EQ(v.exp_avg_sq.defined(), !(muon && is_muon_matrix(params[i].spec)))
          << l.name << " " << params[i].spec.name;
    }
  }
}

}  // namespace
}  // namespace trident::testing
