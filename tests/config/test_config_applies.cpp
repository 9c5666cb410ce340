// Keys that have an effect only for one model family or ZeRO stage: set where they change
// nothing, they are refused with the key, the condition and the fix; left out, they are not
// written by to_toml; in a checkpoint's stored config (written by trident) they are a record.
#include <gmock/gmock.h>  // EXPECT_THAT, HasSubstr, Not
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/config.h"
#include "config_test_util.h"

namespace trident {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_config::error_of;

/// The llama-only keys, each with a value that gpt2 would have accepted silently before:
/// kv_heads = heads and ffn_hidden = 4 * hidden are what gpt2 has anyway.
const std::vector<std::string> kLlamaOnly = {"rope_theta = 500.0", "norm_eps = 1e-6",
                                             "tie_embeddings = true", "kv_heads = 4",
                                             "ffn_hidden = 256"};

TEST(ConfigApplies, gpt2_refuses_each_llama_key_set_in_the_file) {
  for (const std::string& line : kLlamaOnly) {
    const std::string key = line.substr(0, line.find(' '));
    EXPECT_EQ(error_of("[model]\nhidden = 64\nheads = 4\n" + line + "\n"),
              "configs/x.toml:4: model." + key +
                  " applies only to model.arch = \"llama\", and here model.arch = \"gpt2\", so "
                  "it would change nothing; remove it or set model.arch = \"llama\"")
        << line;
  }
}

TEST(ConfigApplies, gpt2_refuses_a_llama_key_from_set) {
  EXPECT_THAT(error_of("", {"model.rope_theta=500.0"}),
              HasSubstr("--set model.rope_theta=500.0: model.rope_theta applies only to "
                        "model.arch = \"llama\""));
  // Set to llama by --set, the same key in the file is fine.
  EXPECT_EQ(error_of("[model]\nffn_hidden = 96\nrope_theta = 500.0\n", {"model.arch=llama"}), "");
}

TEST(ConfigApplies, zero3_keys_are_refused_below_stage_3) {
  const std::vector<std::string> zero3_keys = {
      "zero3_prefetch = \"off\"", "zero3_max_live_layers = 3", "zero3_persist_below = 0",
      "zero3_reshard_after_forward = \"off\""};
  for (const std::string& line : zero3_keys) {
    const std::string key = line.substr(0, line.find(' '));
    for (int stage : {0, 1, 2}) {
      EXPECT_EQ(error_of("[parallel]\nzero_stage = " + std::to_string(stage) + "\n" + line + "\n"),
                "configs/x.toml:3: parallel." + key +
                    " applies only to parallel.zero_stage = 3, and here parallel.zero_stage = " +
                    std::to_string(stage) +
                    ", so it would change nothing; remove it or set parallel.zero_stage = 3")
          << line << " at stage " << stage;
    }
    EXPECT_EQ(error_of("[parallel]\nzero_stage = 3\n" + line + "\n"), "") << line;
  }
}

TEST(ConfigApplies, every_refused_key_is_reported) {
  const std::string text =
      error_of("[model]\nnorm_eps = 1e-6\n[parallel]\nzero3_prefetch = \"off\"\n");
  EXPECT_THAT(text, HasSubstr("configs/x.toml:2: model.norm_eps applies only"));
  EXPECT_THAT(text, HasSubstr("configs/x.toml:4: parallel.zero3_prefetch applies only"));
}

TEST(ConfigApplies, to_toml_leaves_out_what_does_not_apply_and_round_trips) {
  const TrainConfig gpt2 = parse_config("[parallel]\nzero_stage = 2\n", "x", {}, 0);
  const std::string text = to_toml(gpt2);
  for (const char* key :
       {"rope_theta", "norm_eps", "tie_embeddings", "kv_heads", "ffn_hidden", "zero3_prefetch",
        "zero3_max_live_layers", "zero3_persist_below", "zero3_reshard_after_forward"})
    EXPECT_THAT(text, Not(HasSubstr(std::string("\n") + key + " = "))) << key;
  EXPECT_EQ(to_toml(parse_config(text, "<string>", {}, 0)), text);

  const TrainConfig llama3 = parse_config(
      "[model]\narch = \"llama\"\nffn_hidden = 96\n[parallel]\nzero_stage = 3\n", "x", {}, 0);
  const std::string all = to_toml(llama3);
  EXPECT_THAT(all, HasSubstr("\nrope_theta = 10000.0\n"));
  EXPECT_THAT(all, HasSubstr("\nzero3_persist_below = 100000\n"));
  EXPECT_EQ(to_toml(parse_config(all, "<string>", {}, 0)), all);
}

TEST(ConfigApplies, stored_config_with_every_key_loads_but_set_is_still_checked) {
  // What a checkpoint of a gpt2 ZeRO-2 run stored before these keys were refused.
  const std::string stored =
      "[model]\narch = \"gpt2\"\nrope_theta = 10000.0\nkv_heads = 0\n"
      "[parallel]\nzero_stage = 2\nzero3_persist_below = 100\n";
  const TrainConfig c = parse_resolved_config(stored, "<checkpoint c>", {}, 0);
  EXPECT_EQ(c.parallel.zero_stage, 2);
  // Resumed in stage 3, the stored value applies.
  EXPECT_EQ(parse_resolved_config(stored, "<checkpoint c>", {"parallel.zero_stage=3"}, 0)
                .parallel.zero3_persist_below,
            100);
  try {
    parse_resolved_config(stored, "<checkpoint c>", {"model.norm_eps=1e-6"}, 0);
    FAIL() << "a --set llama key on a gpt2 checkpoint was accepted";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--set model.norm_eps=1e-6: model.norm_eps applies only to "
                                    "model.arch = \"llama\""));
  }
  // The same text from a user's file is refused.
  EXPECT_THAT(error_of(stored), HasSubstr("model.rope_theta applies only"));
}

TEST(ConfigApplies, wsd_keys_need_the_wsd_schedule_and_parse_to_enums) {
  EXPECT_EQ(error_of("[optimizer]\ndecay_fraction = 0.1\n"),
            "configs/x.toml:2: optimizer.decay_fraction applies only to optimizer.schedule = "
            "\"wsd\", and here optimizer.schedule = \"cosine\", so it would change nothing; "
            "remove it or set optimizer.schedule = \"wsd\"");
  const TrainConfig c = parse_config(
      "[optimizer]\nschedule = \"wsd\"\ndecay_fraction = 0.1\ndecay_shape = \"cosine\"\n",
      "configs/x.toml", {}, 0);
  EXPECT_EQ(c.optimizer.schedule, LrScheduleKind::kWsd);
  EXPECT_EQ(c.optimizer.decay_fraction, 0.1);
  EXPECT_EQ(c.optimizer.decay_shape, DecayShape::kCosine);
  EXPECT_EQ(
      parse_config("", "configs/x.toml", {"optimizer.schedule=inverse_sqrt"}, 0).optimizer.schedule,
      LrScheduleKind::kInverseSqrt);
  EXPECT_THAT(error_of("", {"optimizer.schedule=wsd", "optimizer.decay_fraction=1.5"}),
              HasSubstr("optimizer.decay_fraction"));
  EXPECT_THAT(error_of("", {"optimizer.schedule=step"}),
              HasSubstr("\"cosine\", \"linear\", \"wsd\", \"constant\", \"inverse_sqrt\""));
}

}  // namespace
}  // namespace trident
