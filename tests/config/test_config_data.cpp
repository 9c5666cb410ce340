// The [data] and [eval] keys of mixtures, epochs, held-out windows and evaluation: how
// [[data.mix]] reads and prints, and every refusal with the key it names.
#include <gmock/gmock.h>  // EXPECT_THAT, HasSubstr
#include <gtest/gtest.h>

#include "config/config.h"
#include "config_test_util.h"

namespace trident {
namespace {

using ::testing::HasSubstr;
using testing_config::error_of;

constexpr const char* kMix =
    "[data]\nvalid_fraction = 0.01\n\n"
    "[[data.mix]]\npath = \"corpora/web.bin\"\nweight = 0.7\n\n"
    "[[data.mix]]\npath = \"corpora/code.bin\"\nweight = 0.3\nname = \"py\"\n";

TEST(ConfigData, mix_tables_read_with_default_names_and_round_trip) {
  const TrainConfig c = parse_config(kMix, "configs/x.toml", {}, 0);
  ASSERT_EQ(c.data.mix.size(), 2u);
  EXPECT_EQ(c.data.mix[0].path, "corpora/web.bin");
  EXPECT_EQ(c.data.mix[0].weight, 0.7);
  EXPECT_EQ(c.data.mix[0].name, "web");  // the file's stem
  EXPECT_EQ(c.data.mix[1].name, "py");
  EXPECT_EQ(c.data.source, "");  // the mixture replaces it
  EXPECT_EQ(c.data.order, DataOrder::kEpochs);
  const std::string toml = to_toml(c);
  EXPECT_THAT(toml, HasSubstr("[[data.mix]]\npath = \"corpora/web.bin\"\nweight = 0.7\nname = "
                              "\"web\"\n"));
  EXPECT_THAT(toml, ::testing::Not(HasSubstr("source = \"\"\n\n[[data")));
  const TrainConfig back = parse_config(toml, "<string>", {}, 0);
  EXPECT_EQ(to_toml(back), toml);
  const TrainConfig resolved = parse_resolved_config(toml, "<string>", {}, 0);
  EXPECT_EQ(to_toml(resolved), toml);
}

TEST(ConfigData, a_mixture_can_come_from_set) {
  const TrainConfig c =
      parse_config("", "configs/x.toml",
                   {"data.mix=[{path = \"a.bin\", weight = 3}, {path = \"b/a.idx\", name = \"b\"}]",
                    "data.order=windows"},
                   0);
  ASSERT_EQ(c.data.mix.size(), 2u);
  EXPECT_EQ(c.data.mix[1].weight, 1.0);
  EXPECT_EQ(c.data.order, DataOrder::kWindows);
}

TEST(ConfigData, mixture_mistakes_name_the_table) {
  EXPECT_THAT(error_of("[data]\nsource = \"a.bin\"\n[[data.mix]]\npath = \"b.bin\"\n"),
              HasSubstr("configs/x.toml:2: data.source and [[data.mix]] are both given; list "
                        "every file in [[data.mix]] (one table for a single file) and remove "
                        "data.source"));
  EXPECT_THAT(error_of("[[data.mix]]\npath = \"a.bin\"\nweight = -1\n"),
              HasSubstr("configs/x.toml:1: data.mix[0].weight = -1.0 is not valid; it must be "
                        ">= 0"));
  EXPECT_THAT(error_of("[[data.mix]]\npath = \"a.bin\"\nweight = 0\n[[data.mix]]\npath = "
                       "\"b.bin\"\nweight = 0\n"),
              HasSubstr("the weights of data.mix sum to 0; give at least one file a positive "
                        "weight"));
  EXPECT_THAT(error_of("[[data.mix]]\npath = \"a.bin\"\nwieght = 2\n"),
              HasSubstr("configs/x.toml:1: unknown key 'data.mix[0].wieght'; did you mean "
                        "'weight'?"));
  EXPECT_THAT(error_of("[[data.mix]]\nweight = 2\n"),
              HasSubstr("data.mix[0] has no path; every [[data.mix]] table needs path = ..."));
  EXPECT_THAT(error_of("[[data.mix]]\npath = 3\n"),
              HasSubstr("data.mix[0].path must be a string, got integer 3"));
  EXPECT_THAT(error_of("[data]\nmix = \"a.bin\"\n"),
              HasSubstr("data.mix must be an array of tables"));
  EXPECT_THAT(error_of("[[data.mix]]\npath = \"x/a.bin\"\n[[data.mix]]\npath = \"y/a.bin\"\n"),
              HasSubstr("data.mix[1] and data.mix[0] are both named \"a\"; give each its own "
                        "name = \"...\""));
}

TEST(ConfigData, held_out_fraction_and_order_are_checked) {
  EXPECT_THAT(error_of("[data]\nsource = \"a.bin\"\nvalid_fraction = 1.0\n"),
              HasSubstr("configs/x.toml:3: data.valid_fraction = 1.0 is not valid; it must be in "
                        "[0, 1)"));
  EXPECT_THAT(error_of("[data]\nsource = \"a.bin\"\nvalid_fraction = -0.1\n"),
              HasSubstr("data.valid_fraction = -0.1 is not valid; it must be in [0, 1)"));
  EXPECT_THAT(error_of("[data]\nsource = \"a.bin\"\norder = \"shuffle\"\n"),
              HasSubstr("data.order = \"shuffle\" is not valid; it must be one of \"epochs\", "
                        "\"windows\""));
  EXPECT_THAT(error_of("[data]\nvalid_fraction = 0.1\n"),
              HasSubstr("configs/x.toml:2: data.valid_fraction has no effect with data.source = "
                        "\"synthetic\", so it would change nothing; remove it"));
  EXPECT_THAT(error_of("[data]\norder = \"windows\"\n"),
              HasSubstr("configs/x.toml:2: data.order has no effect with data.source = "
                        "\"synthetic\", so it would change nothing; remove it"));
  // Synthetic configs print neither, so that they read back.
  const TrainConfig synthetic = parse_config("", "configs/x.toml", {}, 0);
  EXPECT_THAT(to_toml(synthetic), ::testing::Not(HasSubstr("\norder = ")));
  EXPECT_EQ(to_toml(parse_config(to_toml(synthetic), "<string>", {}, 0)), to_toml(synthetic));
}

TEST(ConfigData, eval_keys_default_off_and_check_their_data) {
  const TrainConfig c = parse_config("[train]\nmicro_batch_size = 2\nglobal_batch_size = 8\n",
                                     "configs/x.toml", {}, 0);
  EXPECT_FALSE(c.eval.enabled());
  EXPECT_TRUE(c.eval.at_end);
  EXPECT_EQ(c.eval_micro_batch(), 2);
  const TrainConfig on = parse_config("[eval]\nsequences = 16\nevery = 10\nmicro_batch = 4\n",
                                      "configs/x.toml", {}, 0);
  EXPECT_TRUE(on.eval.enabled());
  EXPECT_EQ(on.eval_micro_batch(), 4);
  EXPECT_THAT(error_of("[eval]\nevery = 10\n"),
              HasSubstr("configs/x.toml:2: eval.every = 10 evaluates every 10 steps, but "
                        "eval.sequences = 0 turns evaluation off; set eval.sequences (e.g. 64)"));
  EXPECT_THAT(error_of("[data]\nsource = \"a.bin\"\n[eval]\nsequences = 8\n"),
              HasSubstr("configs/x.toml:4: eval.sequences = 8 evaluates on the training files' "
                        "held-out windows, but data.valid_fraction = 0 holds none out; set "
                        "data.valid_fraction (e.g. 0.01), or eval.source to a file the run does "
                        "not train on"));
  EXPECT_THAT(error_of("[data]\nsource = \"a.bin\"\n[eval]\nsource = \"a.bin\"\nsequences = 8\n"),
              HasSubstr("configs/x.toml:4: eval.source = \"a.bin\" is data.source, so the "
                        "evaluation would measure windows the run trains on"));
  EXPECT_THAT(error_of(std::string(kMix) + "[eval]\nsource = \"corpora/code.bin\"\n"),
              HasSubstr("eval.source = \"corpora/code.bin\" is also a training file of "
                        "[[data.mix]]"));
  EXPECT_EQ(error_of("[data]\nsource = \"a.bin\"\nvalid_fraction = 0.05\n[eval]\nsequences = 8\n"),
            "");
  EXPECT_EQ(error_of("[data]\nsource = \"a.bin\"\n[eval]\nsequences = 8\n[[eval.mix]]\npath = "
                     "\"v.bin\"\n"),
            "");
  EXPECT_THAT(error_of("[eval]\nsource = \"v.bin\"\n[[eval.mix]]\npath = \"w.bin\"\n"),
              HasSubstr("eval.source and [[eval.mix]] are both given"));
}

}  // namespace
}  // namespace trident
