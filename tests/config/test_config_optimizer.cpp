// The optimizer's name and Muon's keys: parsed, their defaults, and the combinations that
// cannot work refused with a message naming the key and the fix.
#include <gmock/gmock.h>  // EXPECT_THAT, HasSubstr
#include <gtest/gtest.h>

#include "config/config.h"
#include "config_test_util.h"

namespace trident {
namespace {

using ::testing::HasSubstr;
using testing_config::error_of;

TEST(ConfigOptimizer, adamw_by_default_and_muon_with_its_keys) {
  const TrainConfig adamw = parse_config("", "configs/x.toml", {}, 0);
  EXPECT_EQ(adamw.optimizer.name, OptimizerName::kAdamW);
  EXPECT_FALSE(adamw.optimizer.reset_states);
  const TrainConfig c = parse_config(
      "[optimizer]\nname = \"muon\"\nmuon_momentum = 0.9\nmuon_nesterov = false\n"
      "muon_ns_steps = 6\nmuon_scale = \"spectral\"\nmuon_lr = 0.05\nreset_states = true\n",
      "configs/x.toml", {}, 0);
  EXPECT_EQ(c.optimizer.name, OptimizerName::kMuon);
  EXPECT_EQ(c.optimizer.muon_momentum, 0.9);
  EXPECT_FALSE(c.optimizer.muon_nesterov);
  EXPECT_EQ(c.optimizer.muon_ns_steps, 6);
  EXPECT_EQ(c.optimizer.muon_scale, MuonScale::kSpectral);
  EXPECT_EQ(c.optimizer.muon_lr, 0.05);
  EXPECT_TRUE(c.optimizer.reset_states);
}

TEST(ConfigOptimizer, unknown_name_lists_the_optimizers) {
  EXPECT_EQ(error_of("[optimizer]\nname = \"sgd\"\n"),
            "configs/x.toml:2: optimizer.name = \"sgd\" is not valid; it must be one of "
            "\"adamw\", \"muon\"");
}

TEST(ConfigOptimizer, muon_refuses_the_nvme_tier_for_its_momentum) {
  EXPECT_THAT(error_of("[optimizer]\nname = \"muon\"\n[parallel]\nzero_stage = 2\n"
                       "offload_optimizer = \"nvme\"\nnvme_path = \"/tmp/tier\"\n"),
              HasSubstr("optimizer.name = \"muon\" keeps its momentum in memory"));
}

TEST(ConfigOptimizer, muon_momentum_below_one) {
  EXPECT_THAT(error_of("[optimizer]\nname = \"muon\"\nmuon_momentum = 1.0\n"),
              HasSubstr("optimizer.muon_momentum"));
}

}  // namespace
}  // namespace trident
