// Parsing valid configs: values and defaults, --set overrides, dp derivation, the
// derived quantities, and the to_toml round trip.
#include <gmock/gmock.h>  // EXPECT_THAT, HasSubstr
#include <gtest/gtest.h>

#include <cstdio>  // std::remove
#include <fstream>

#include "config/config.h"

namespace trident {
namespace {

constexpr const char* kValid = R"(
[model]
layers = 4
hidden = 128
heads = 8

[parallel]
pp = 2
tp = 2
schedule = "gpipe"

[optimizer]
lr = 3e-4
)";

TEST(ConfigParse, valid_file_gives_values_and_defaults) {
  const TrainConfig c = parse_config(kValid, "configs/x.toml", {}, 0);
  EXPECT_EQ(c.source, "configs/x.toml");
  EXPECT_EQ(c.model.layers, 4);
  EXPECT_EQ(c.model.hidden, 128);
  EXPECT_EQ(c.model.heads, 8);
  EXPECT_EQ(c.parallel.pp, 2);
  EXPECT_EQ(c.parallel.tp, 2);
  EXPECT_EQ(c.parallel.schedule, PipelineSchedule::kGpipe);
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 3e-4);
  // Defaults for everything not in the file.
  const TrainConfig d;
  EXPECT_EQ(c.model.arch, d.model.arch);
  EXPECT_EQ(c.model.vocab, d.model.vocab);
  EXPECT_EQ(c.parallel.bucket_size, d.parallel.bucket_size);
  EXPECT_EQ(c.train.precision, Precision::kFp32);
  EXPECT_EQ(c.train.seed, 1234);
  EXPECT_DOUBLE_EQ(c.optimizer.beta2, 0.95);
  EXPECT_EQ(c.data.source, "synthetic");
  EXPECT_EQ(c.checkpoint.dir, "");
  EXPECT_EQ(c.parallel.dp, 1);  // world size 0: dp 0 becomes 1
}

TEST(ConfigParse, empty_text_is_all_defaults) {
  const TrainConfig c = parse_config("", "<string>", {}, 0);
  TrainConfig d;
  d.parallel.dp = 1;
  d.source = "<string>";
  EXPECT_EQ(to_toml(c), to_toml(d));
}

TEST(ConfigParse, integer_is_accepted_for_float) {
  const TrainConfig c = parse_config("[optimizer]\nlr = 1\nmin_lr = 0\n", "x", {}, 0);
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 1.0);
  EXPECT_DOUBLE_EQ(c.optimizer.min_lr, 0.0);
}

TEST(ConfigParse, dotted_keys_and_inline_tables_work) {
  const TrainConfig c = parse_config("model.layers = 6\ntrain = { steps = 7 }\n", "x", {}, 0);
  EXPECT_EQ(c.model.layers, 6);
  EXPECT_EQ(c.train.steps, 7);
}

TEST(ConfigParse, overrides_replace_file_values) {
  const TrainConfig c = parse_config(
      kValid, "configs/x.toml",
      {"model.layers=8", "optimizer.lr=1e-3", "parallel.schedule=1f1b", "train.precision=\"fp64\"",
       "data.source = /tmp/tokens.bin", "checkpoint.load=2024", "model.layers = 2"},
      0);
  EXPECT_EQ(c.model.layers, 2);  // the later override wins
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 1e-3);
  EXPECT_EQ(c.parallel.schedule, PipelineSchedule::kOneFOneB);  // a bare word is a string
  EXPECT_EQ(c.train.precision, Precision::kFp64);               // a quoted TOML string works too
  EXPECT_EQ(c.data.source, "/tmp/tokens.bin");
  EXPECT_EQ(c.checkpoint.load, "2024");  // a string key keeps the text as written
}

TEST(ConfigParse, override_can_fix_an_invalid_file_value) {
  const TrainConfig c = parse_config("[model]\nlayers = 0\n", "x", {"model.layers=3"}, 0);
  EXPECT_EQ(c.model.layers, 3);
}

TEST(ConfigParse, dp_is_derived_from_world_size_pp2_tp2_world8) {
  const TrainConfig c = parse_config(kValid, "x", {}, 8);
  EXPECT_EQ(c.parallel.dp, 2);
  EXPECT_EQ(c.micro_batches(), 8 / (2 * 2));
}

TEST(ConfigParse, explicit_dp_matching_world_size_is_kept_dp2_pp2_tp2) {
  const TrainConfig c = parse_config(kValid, "x", {"parallel.dp=2"}, 8);
  EXPECT_EQ(c.parallel.dp, 2);
}

TEST(ConfigParse, explicit_dp_is_kept_without_world_size) {
  const TrainConfig c =
      parse_config(kValid, "x", {"parallel.dp=4", "train.global_batch_size=16"}, 0);
  EXPECT_EQ(c.parallel.dp, 4);
  EXPECT_EQ(c.micro_batches(), 2);
}

TEST(ConfigParse, padded_vocab_rounds_to_lcm_of_multiple_and_tp) {
  TrainConfig c;
  c.model.vocab = 50257;
  c.model.vocab_multiple = 128;
  EXPECT_EQ(c.padded_vocab(), 50304);
  c.model.vocab = 256;
  c.model.vocab_multiple = 1;
  c.parallel.tp = 3;
  EXPECT_EQ(c.padded_vocab(), 258);
  c.model.vocab_multiple = 4;  // lcm(4, 3) = 12
  EXPECT_EQ(c.padded_vocab(), 264);
}

TEST(ConfigParse, to_toml_round_trips_every_key) {
  TrainConfig c = parse_config(kValid, "x", {}, 8);
  c.optimizer.lr = 0.1 + 0.2;  // not a short decimal: needs all digits to come back
  c.optimizer.min_lr = 1e-7;
  c.parallel.timeout_s = 60;
  c.train.seed = 987654321012345;
  c.data.source = "dir with \"quotes\" and \\ backslash\t.bin";
  c.logging.trace = "runs/trace.json";
  const std::string text = to_toml(c);
  EXPECT_THAT(text, ::testing::HasSubstr("[model]\narch = \"gpt2\"\nlayers = 4\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("timeout_s = 60.0\n"));
  const TrainConfig back = parse_config(text, "<string>", {}, 8);
  EXPECT_EQ(to_toml(back), text);
  EXPECT_EQ(back.optimizer.lr, c.optimizer.lr);  // bit for bit
  EXPECT_EQ(back.optimizer.min_lr, c.optimizer.min_lr);
  EXPECT_EQ(back.train.seed, c.train.seed);
  EXPECT_EQ(back.data.source, c.data.source);
  EXPECT_EQ(back.parallel.dp, 2);
  EXPECT_EQ(back.parallel.schedule, PipelineSchedule::kGpipe);
}

TEST(ConfigParse, load_config_reads_a_file) {
  const std::string path = ::testing::TempDir() + "trident_config_load_test.toml";
  {
    std::ofstream out(path);
    out << kValid;
  }
  const TrainConfig c = load_config(path, {"train.steps=5"}, 4);
  std::remove(path.c_str());
  EXPECT_EQ(c.source, path);
  EXPECT_EQ(c.train.steps, 5);
  EXPECT_EQ(c.parallel.dp, 1);
}

}  // namespace
}  // namespace trident
