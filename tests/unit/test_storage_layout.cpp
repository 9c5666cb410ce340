// What `trident convert` keeps of a saving run's [parallel] section (checkpoint/ownership.h):
// the keys that decide which rank stores which slice, and nothing that needs that run's
// layout (a schedule with model chunks, sequence parallelism, offload tiers).
#include <gtest/gtest.h>

#include "checkpoint/ownership.h"  // storage_layout
#include "config/config.h"         // ParallelConfig

namespace trident::checkpoint {
namespace {

TEST(StorageLayout, keeps_the_placement_of_slices_and_resets_how_the_run_ran) {
  ParallelConfig saved;
  saved.dp = 2;
  saved.cp = 2;
  saved.pp = 2;
  saved.tp = 2;
  saved.ep = 2;
  saved.zero_stage = 3;
  saved.bucket_size = 4096;
  saved.zero3_persist_below = 77;
  saved.schedule = PipelineSchedule::kInterleaved1F1B;
  saved.virtual_stages = 2;
  saved.sequence_parallel = true;
  saved.activation_checkpointing = ActivationCheckpointing::kFull;
  saved.offload_optimizer = OffloadTier::kNvme;
  saved.offload_params = OffloadTier::kNvme;
  saved.nvme_path = "/scratch/tier";
  saved.timeout_s = 30;
  saved.automatic = true;

  const ParallelConfig kept = storage_layout(saved);
  EXPECT_EQ(kept.dp, 2);
  EXPECT_EQ(kept.cp, 2);
  EXPECT_EQ(kept.pp, 2);
  EXPECT_EQ(kept.tp, 2);
  EXPECT_EQ(kept.ep, 2);
  EXPECT_EQ(kept.zero_stage, 3);
  EXPECT_EQ(kept.bucket_size, 4096);
  EXPECT_EQ(kept.zero3_persist_below, 77);

  const ParallelConfig defaults;
  EXPECT_EQ(kept.schedule, defaults.schedule);
  EXPECT_EQ(kept.virtual_stages, 1);
  EXPECT_FALSE(kept.sequence_parallel);
  EXPECT_EQ(kept.activation_checkpointing, defaults.activation_checkpointing);
  EXPECT_EQ(kept.offload_optimizer, OffloadTier::kNone);
  EXPECT_EQ(kept.offload_params, OffloadTier::kNone);
  EXPECT_EQ(kept.nvme_path, "");
  EXPECT_EQ(kept.timeout_s, defaults.timeout_s);
  EXPECT_FALSE(kept.automatic);
}

}  // namespace
}  // namespace trident::checkpoint
