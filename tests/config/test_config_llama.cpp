// The Llama keys: parsing (a boolean key among them) and the shape checks that name what
// does not fit, with the file and line.
#include <gmock/gmock.h>  // EXPECT_THAT, HasSubstr
#include <gtest/gtest.h>

#include "config/config.h"
#include "config_test_util.h"

namespace trident {
namespace {

using ::testing::HasSubstr;
using testing_config::error_of;

const std::string kLlama =
    "[model]\narch = \"llama\"\nlayers = 2\nhidden = 64\nheads = 8\nkv_heads = 2\n"
    "ffn_hidden = 96\n";

TEST(ConfigLlama, parses_the_llama_keys) {
  const TrainConfig c = parse_config(kLlama +
                                         "rope_theta = 500000.0\nnorm_eps = 1e-6\n"
                                         "tie_embeddings = true\n",
                                     "configs/x.toml", {}, 0);
  EXPECT_EQ(c.model.arch, ModelArch::kLlama);
  EXPECT_EQ(c.model.kv_head_count(), 2);
  EXPECT_EQ(c.model.ffn_hidden, 96);
  EXPECT_EQ(c.model.rope_theta, 500000.0);
  EXPECT_EQ(c.model.norm_eps, 1e-6);
  EXPECT_TRUE(c.model.tie_embeddings);
  const TrainConfig back = parse_config(to_toml(c), "<string>", {}, 0);
  EXPECT_EQ(to_toml(back), to_toml(c));
  // A boolean through --set, and kv_heads 0 meaning heads.
  const TrainConfig o =
      parse_config(kLlama, "configs/x.toml", {"model.tie_embeddings=true", "model.kv_heads=0"}, 0);
  EXPECT_TRUE(o.model.tie_embeddings);
  EXPECT_EQ(o.model.kv_head_count(), 8);
}

TEST(ConfigLlama, boolean_key_refuses_other_types) {
  EXPECT_THAT(error_of(kLlama + "tie_embeddings = 1\n"),
              HasSubstr("configs/x.toml:8: model.tie_embeddings must be a boolean, got integer 1"));
}

TEST(ConfigLlama, heads_must_divide_by_kv_heads) {
  EXPECT_THAT(error_of(kLlama, {"model.kv_heads=3"}),
              HasSubstr("model.heads = 8 is not divisible by model.kv_heads = 3"));
}

TEST(ConfigLlama, ffn_hidden_is_required) {
  EXPECT_THAT(error_of("[model]\narch = \"llama\"\nhidden = 64\nheads = 8\n"),
              HasSubstr("model.arch = \"llama\" needs model.ffn_hidden"));
}

TEST(ConfigLlama, tp_beyond_kv_heads_must_be_a_multiple_of_them) {
  // tp 4 > 2 kv heads: each kv head on 2 ranks, fine; tp 8 is fine too.
  EXPECT_EQ(error_of(kLlama, {"parallel.tp=4"}), "");
  EXPECT_EQ(error_of(kLlama, {"parallel.tp=8"}), "");
  const std::string six_heads =
      "[model]\narch = \"llama\"\nhidden = 96\nheads = 12\nkv_heads = 4\nffn_hidden = 96\n";
  EXPECT_THAT(error_of(six_heads, {"parallel.tp=6"}),
              HasSubstr("parallel.tp = 6 exceeds model.kv_heads = 4, so each kv head is "
                        "replicated on tp / kv_heads ranks, and that needs tp to be a multiple "
                        "of kv_heads; use tp in {1, 2, 4} or a multiple of 4"));
  EXPECT_THAT(error_of(six_heads, {"model.kv_heads=6", "parallel.tp=4"}),
              HasSubstr("model.kv_heads = 6 is not divisible by parallel.tp = 4"));
}

TEST(ConfigLlama, odd_head_size_cannot_rotate) {
  EXPECT_THAT(error_of(kLlama, {"model.hidden=72"}), HasSubstr("is odd; RoPE rotates pairs"));
}

TEST(ConfigLlama, moe_keys_parse_and_round_trip) {
  const TrainConfig c = parse_config(kLlama +
                                         "moe_experts = 8\nmoe_top_k = 2\nmoe_ffn_hidden = 48\n"
                                         "moe_layer_every = 2\nmoe_z_loss_coeff = 0.001\n",
                                     "configs/x.toml", {}, 0);
  EXPECT_EQ(c.model.moe_experts, 8);
  EXPECT_FALSE(c.model.moe_layer(0));
  EXPECT_TRUE(c.model.moe_layer(1));
  EXPECT_EQ(c.model.moe_z_loss_coeff, 0.001);
  const TrainConfig back = parse_config(to_toml(c), "<string>", {}, 0);
  EXPECT_EQ(to_toml(back), to_toml(c));
}

TEST(ConfigLlama, moe_top_k_beyond_the_experts_is_refused) {
  EXPECT_THAT(error_of(kLlama + "moe_experts = 2\nmoe_top_k = 3\n"),
              HasSubstr("model.moe_top_k = 3 is more than model.moe_experts = 2"));
}

TEST(ConfigLlama, expert_parallelism_needs_experts_it_divides_and_dp_ranks_to_carve) {
  EXPECT_THAT(error_of(kLlama, {"parallel.ep=2"}),
              HasSubstr("parallel.ep = 2 shares out the experts of a Mixture-of-Experts model, "
                        "but this model has none"));
  EXPECT_THAT(error_of(kLlama + "moe_experts = 6\n", {"parallel.ep=4", "parallel.dp=4"}, 4),
              HasSubstr("parallel.ep = 4 does not divide model.moe_experts = 6 (every ep rank "
                        "holds as many experts); use ep in {1, 2, 3, 6}"));
  EXPECT_THAT(error_of(kLlama + "moe_experts = 4\n", {"parallel.ep=4"}, 2),
              HasSubstr("parallel.ep = 4 does not divide parallel.dp = 2 (the ep ranks are "
                        "carved out of the dp ranks); use ep in {1, 2}"));
  const TrainConfig c =
      parse_config(kLlama + "moe_experts = 4\n", "configs/x.toml", {"parallel.ep=2"}, 4);
  EXPECT_EQ(c.parallel.ep, 2);
  EXPECT_EQ(c.parallel.dp, 4);
}

}  // namespace
TEST(ConfigLlama, context_parallelism_cuts_the_sequence_evenly_and_counts_in_the_world) {
  // seq_len 32: cp 3 cannot cut it into 6 equal chunks.
  EXPECT_THAT(
      error_of(kLlama, {"parallel.cp=3"}, 3),
      HasSubstr("parallel.cp = 3 cuts each sequence into 2 * 3 = 6 equal chunks, but "
                "model.seq_len = 32 is not divisible by 6; use a seq_len that is a multiple "
                "of it, or cp in {1, 2, 4, 8, 16}"));
  EXPECT_THAT(error_of(kLlama, {"parallel.cp=2", "parallel.dp=2"}, 2),
              HasSubstr("parallel.dp * parallel.cp * parallel.pp * parallel.tp = 2 * 2 * 1 * 1 = 4 "
                        "does not match the world size 2"));
  EXPECT_THAT(
      error_of(kLlama + "moe_experts = 4\nmoe_capacity_factor = 1.0\n", {"parallel.cp=2"}, 2),
      HasSubstr("parallel.cp = 2 does not run with an expert capacity "
                "(model.moe_capacity_factor = 1"));
  EXPECT_EQ(error_of(kLlama + "moe_experts = 4\n", {"parallel.cp=2"}, 2), "");
  EXPECT_THAT(
      error_of(kLlama, {"parallel.cp=16", "parallel.tp=4", "parallel.sequence_parallel=true"}, 64),
      HasSubstr("splits each cp rank's 2 tokens (model.seq_len / parallel.cp) over tp = 4"));
  EXPECT_THAT(error_of(kLlama, {"data.eod_token=999"}),
              HasSubstr("data.eod_token = 999 is not a token of the vocabulary"));
  // dp is derived over cp x pp x tp, and ep is carved out of dp x cp.
  const TrainConfig c = parse_config(kLlama, "<string>", {"parallel.cp=2"}, 8);
  EXPECT_EQ(c.parallel.dp, 4);
  EXPECT_EQ(c.parallel.cp, 2);
}

}  // namespace trident
