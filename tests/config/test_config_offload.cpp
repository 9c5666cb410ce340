// The offload keys: parsed into their enums, and the combinations that cannot work refused
// with a message naming the key and the fix.
#include <gmock/gmock.h>  // EXPECT_THAT, HasSubstr
#include <gtest/gtest.h>

#include "config/config.h"
#include "config_test_util.h"

namespace trident {
namespace {

using ::testing::HasSubstr;
using testing_config::error_of;

TEST(ConfigOffload, parses_tiers_path_and_io_knobs) {
  const TrainConfig c = parse_config(
      "[parallel]\nzero_stage = 3\noffload_optimizer = \"nvme\"\noffload_params = \"nvme\"\n"
      "nvme_path = \"/scratch/tier\"\noffload_buffer_count = 6\noffload_block_size = 1048576\n",
      "configs/x.toml", {}, 0);
  EXPECT_EQ(c.parallel.offload_optimizer, OffloadTier::kNvme);
  EXPECT_EQ(c.parallel.offload_params, OffloadTier::kNvme);
  EXPECT_EQ(c.parallel.nvme_path, "/scratch/tier");
  EXPECT_EQ(c.parallel.offload_buffer_count, 6);
  EXPECT_EQ(c.parallel.offload_block_size, 1048576);
}

TEST(ConfigOffload, defaults_keep_everything_in_memory) {
  const TrainConfig c = parse_config("", "configs/x.toml", {}, 0);
  EXPECT_EQ(c.parallel.offload_optimizer, OffloadTier::kNone);
  EXPECT_EQ(c.parallel.offload_params, OffloadTier::kNone);
  EXPECT_EQ(c.parallel.offload_buffer_count, 4);
  EXPECT_EQ(c.parallel.offload_block_size, 4 << 20);
}

TEST(ConfigOffload, unknown_tier_lists_the_tiers) {
  EXPECT_EQ(error_of("[parallel]\noffload_optimizer = \"disk\"\n"),
            "configs/x.toml:2: parallel.offload_optimizer = \"disk\" is not valid; it must be "
            "one of \"none\", \"nvme\"");
}

// Nothing runs a cpu tier: a CPU-device run's states are in host memory already and a CUDA
// run has no pinned-host tier, so "cpu" is refused rather than accepted as a no-op.
TEST(ConfigOffload, cpu_tier_is_refused_with_the_reason_and_nvme_offered) {
  const std::string why =
      "; there is no cpu tier: with train.device = \"cpu\" the states are in host memory "
      "already, so it would save nothing, and a CUDA run does not offload to pinned host "
      "memory; use \"nvme\" (files under parallel.nvme_path) to take them out of memory, or "
      "\"none\"";
  EXPECT_EQ(error_of("[parallel]\nzero_stage = 1\noffload_optimizer = \"cpu\"\n"),
            "configs/x.toml:3: parallel.offload_optimizer = \"cpu\" is not valid; it must be one "
            "of \"none\", \"nvme\"" +
                why);
  EXPECT_EQ(error_of("[parallel]\nzero_stage = 3\n", {"parallel.offload_params=cpu"}),
            "--set parallel.offload_params=cpu: parallel.offload_params = \"cpu\" is not valid; "
            "it must be one of \"none\", \"nvme\"" +
                why);
  EXPECT_THAT(error_of("[train]\ndevice = \"cuda\"\n[parallel]\noffload_optimizer = \"cpu\"\n"),
              HasSubstr("there is no cpu tier"));
}

TEST(ConfigOffload, offload_params_needs_stage3) {
  EXPECT_THAT(error_of("[parallel]\nzero_stage = 2\noffload_params = \"nvme\"\n"),
              HasSubstr("configs/x.toml:3: parallel.offload_params = \"nvme\" needs "
                        "parallel.zero_stage = 3"));
}

TEST(ConfigOffload, nvme_params_need_nvme_optimizer) {
  EXPECT_THAT(error_of("[parallel]\nzero_stage = 3\nnvme_path = \"/t\"\noffload_params = "
                       "\"nvme\"\n"),
              HasSubstr("parallel.offload_params = \"nvme\" needs parallel.offload_optimizer = "
                        "\"nvme\""));
}

TEST(ConfigOffload, nvme_needs_a_path) {
  EXPECT_THAT(error_of("[parallel]\nzero_stage = 1\noffload_optimizer = \"nvme\"\n"),
              HasSubstr("the nvme tier is on but parallel.nvme_path is empty"));
}

TEST(ConfigOffload, ring_needs_three_buffers_and_a_block_of_a_page) {
  EXPECT_THAT(error_of("[parallel]\noffload_buffer_count = 2\n"),
              HasSubstr("parallel.offload_buffer_count = 2 is not valid; it must be >= 3"));
  EXPECT_THAT(error_of("[parallel]\noffload_block_size = 512\n"),
              HasSubstr("parallel.offload_block_size = 512 is not valid"));
}

}  // namespace
}  // namespace trident
