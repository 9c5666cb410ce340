// The repository's files that depend on the schema: docs/config.md must be the
// generated reference, and every configs/*.toml must parse for its intended world size.
#include <gmock/gmock.h>  // EXPECT_THAT, HasSubstr
#include <gtest/gtest.h>

#include <cstdlib>  // std::getenv
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/config.h"

namespace trident {
namespace {

namespace fs = std::filesystem;

/// The repository root: $TRIDENT_SOURCE_DIR (set by ctest), else found from this file.
fs::path source_dir() {
  if (const char* dir = std::getenv("TRIDENT_SOURCE_DIR")) return dir;
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ConfigDocs, docs_config_md_is_the_generated_reference) {
  const fs::path path = source_dir() / "docs" / "config.md";
  const std::string generated = config_reference_markdown();
  if (std::getenv("TRIDENT_UPDATE_DOCS") != nullptr) {
    std::ofstream(path, std::ios::binary) << generated;
  }
  ASSERT_TRUE(fs::exists(path)) << path;
  EXPECT_EQ(read_file(path), generated)
      << path << " is out of date; regenerate it with TRIDENT_UPDATE_DOCS=1 test_config "
      << "--gtest_filter='ConfigDocs.*'";
}

TEST(ConfigDocs, reference_lists_every_key_with_its_default) {
  const std::string md = config_reference_markdown();
  EXPECT_THAT(md, ::testing::HasSubstr("## [model]"));
  EXPECT_THAT(md, ::testing::HasSubstr("| `layers` | integer | `2` | >= 1 |"));
  EXPECT_THAT(md, ::testing::HasSubstr("| `lr` | float | `0.001` | > 0 |"));
  EXPECT_THAT(md, ::testing::HasSubstr("| `schedule` | string | `\"1f1b\"` | one of \"gpipe\", "
                                       "\"1f1b\", \"interleaved-1f1b\", \"zb-h1\" |"));
  EXPECT_THAT(md, ::testing::HasSubstr("| `dp` | integer | `0` (derived) |"));
}

struct ExampleConfig {
  const char* file;
  int world_size;
};

class ExampleConfigs : public ::testing::TestWithParam<ExampleConfig> {};

TEST_P(ExampleConfigs, parses_for_its_world_size_and_round_trips) {
  const fs::path path = source_dir() / "configs" / GetParam().file;
  const TrainConfig c = load_config(path.string(), {}, GetParam().world_size);
  EXPECT_EQ(c.parallel.dp * c.parallel.pp * c.parallel.tp, GetParam().world_size);
  EXPECT_GE(c.micro_batches(), 1);
  const TrainConfig back = parse_config(to_toml(c), "<string>", {}, GetParam().world_size);
  EXPECT_EQ(to_toml(back), to_toml(c));
}

INSTANTIATE_TEST_SUITE_P(
    Configs, ExampleConfigs,
    ::testing::Values(ExampleConfig{"tiny.toml", 1}, ExampleConfig{"default.toml", 8},
                      ExampleConfig{"gpt2-124m.toml", 1}, ExampleConfig{"smollm-135m.toml", 2},
                      ExampleConfig{"moe-tiny.toml", 1}, ExampleConfig{"mixtral-small.toml", 4}),
    [](const auto& info) {
      std::string name = info.param.file;
      for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

TEST(ExampleConfigValues, tiny_is_one_rank_fp32) {
  const TrainConfig c = load_config((source_dir() / "configs" / "tiny.toml").string(), {}, 1);
  EXPECT_EQ(c.model.layers, 4);
  EXPECT_EQ(c.model.hidden, 64);
  EXPECT_EQ(c.train.precision, Precision::kFp32);
  EXPECT_EQ(c.parallel.dp, 1);
}

TEST(ExampleConfigValues, default_is_dp2_pp2_tp2_zero2) {
  const TrainConfig c = load_config((source_dir() / "configs" / "default.toml").string(), {}, 8);
  EXPECT_EQ(c.parallel.dp, 2);
  EXPECT_EQ(c.parallel.pp, 2);
  EXPECT_EQ(c.parallel.tp, 2);
  EXPECT_EQ(c.parallel.zero_stage, 2);
  EXPECT_EQ(c.parallel.schedule, PipelineSchedule::kOneFOneB);
  EXPECT_EQ(c.parallel.activation_checkpointing, ActivationCheckpointing::kFull);
  EXPECT_EQ(c.data.source, "synthetic");
}

TEST(ExampleConfigValues, gpt2_small_pads_vocab_to_50304) {
  const TrainConfig c = load_config((source_dir() / "configs" / "gpt2-124m.toml").string(), {}, 1);
  EXPECT_EQ(c.model.layers, 12);
  EXPECT_EQ(c.model.hidden, 768);
  EXPECT_EQ(c.model.heads, 12);
  EXPECT_EQ(c.model.seq_len, 1024);
  EXPECT_EQ(c.padded_vocab(), 50304);
}

}  // namespace
}  // namespace trident
