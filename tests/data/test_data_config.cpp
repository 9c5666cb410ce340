// Tests of the config's translation into the data layer's options: the trainer and
// `trident batch` open the data through it, so every key must arrive.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include "config/config.h"     // parse_config
#include "data/data_config.h"  // source_options, eval_set_options, open_eval_set

namespace trident::data {
namespace {

TEST(DataConfig, the_data_and_eval_keys_reach_the_options) {
  const TrainConfig c = parse_config(
      "[model]\nvocab = 300\nseq_len = 16\n[train]\nseed = 77\nmicro_batch_size = 2\n"
      "global_batch_size = 12\n[data]\norder = \"windows\"\nvalid_fraction = 0.05\n"
      "[[data.mix]]\npath = \"a/web.bin\"\nweight = 2\n[[data.mix]]\npath = \"code.bin\"\n"
      "name = \"py\"\n[eval]\nsequences = 6\nsource = \"v.bin\"\n",
      "x.toml", {}, 0);
  const SourceOptions o = source_options(c);
  EXPECT_EQ(o.source, "");
  EXPECT_EQ(o.vocab, 300);
  EXPECT_EQ(o.seq_len, 16);
  EXPECT_EQ(o.seed, 77u);
  EXPECT_EQ(o.global_batch, 12);
  EXPECT_EQ(o.order, DataOrder::kWindows);
  EXPECT_EQ(o.valid_fraction, 0.05);
  ASSERT_EQ(o.mix.size(), 2u);
  EXPECT_EQ(o.mix[0].path, "a/web.bin");
  EXPECT_EQ(o.mix[0].weight, 2.0);
  EXPECT_EQ(o.mix[0].name, "web");
  EXPECT_EQ(o.mix[0].key, "data.mix[0]");
  EXPECT_EQ(o.mix[1].name, "py");
  EXPECT_EQ(o.mix[1].key, "data.mix[1]");
  const EvalSetOptions e = eval_set_options(c);
  EXPECT_EQ(e.source, "v.bin");
  EXPECT_EQ(e.sequences, 6);
  EXPECT_EQ(e.train.mix.size(), 2u);
}

TEST(DataConfig, one_file_and_synthetic_and_no_evaluation) {
  const TrainConfig file = parse_config("[data]\nsource = \"t.bin\"\n", "x.toml", {}, 0);
  EXPECT_EQ(source_options(file).source, "t.bin");
  EXPECT_TRUE(source_options(file).mix.empty());
  EXPECT_EQ(source_options(file).order, DataOrder::kEpochs);
  const TrainConfig synthetic = parse_config("", "x.toml", {}, 0);
  EXPECT_EQ(source_options(synthetic).source, "synthetic");
  EXPECT_EQ(open_eval_set(synthetic).size(), 0);  // eval.sequences = 0: no file is opened
  EXPECT_EQ(open_eval_set(file).size(), 0);
}

}  // namespace
}  // namespace trident::data
