// Inputs the config fuzzer (fuzz/fuzz_config.cpp) found to crash the TOML parser, kept as
// regression tests: each must end in one ConfigError naming the place and the fix.
#include <gmock/gmock.h>  // EXPECT_THAT, HasSubstr
#include <gtest/gtest.h>

#include "config/config.h"
#include "config_test_util.h"

namespace trident {
namespace {

using ::testing::HasSubstr;
using testing_config::error_of;

// U+FEFE (EF BB BE) where toml++ looks for whitespace: its classifier reached
// TOML_UNREACHABLE (undefined behaviour; UBSan stopped the fuzzer on it).
TEST(ConfigFuzzFindings, unclassifiable_character_outside_strings_is_a_config_error) {
  EXPECT_THAT(error_of("\xEF\xBB\xBEhe everyday 3D layout\n"),
              HasSubstr("configs/x.toml:1:1: TOML syntax error: the character U+FEFE may appear "
                        "only inside a string or a comment; remove it"));
  // U+00E9 (é) after a key, on line 3.
  EXPECT_THAT(error_of("[model]\n\nlayers = 2 \xC3\xA9\n"),
              HasSubstr("configs/x.toml:3:12: TOML syntax error: the character U+00E9"));
}

TEST(ConfigFuzzFindings, such_characters_inside_strings_and_comments_are_fine) {
  const TrainConfig c = parse_config(
      "# r\xC3\xA9glages \xEF\xBB\xBE\n[data]\nsource = \"donn\xC3\xA9"
      "es.bin\"\n",
      "x", {}, 0);
  EXPECT_EQ(c.data.source,
            "donn\xC3\xA9"
            "es.bin");
}

TEST(ConfigFuzzFindings, such_a_character_in_a_set_value_is_a_bare_string) {
  const TrainConfig c = parse_config("", "x", {"data.source=caf\xC3\xA9.bin"}, 0);
  EXPECT_EQ(c.data.source, "caf\xC3\xA9.bin");
  EXPECT_THAT(error_of("", {"model.layers=\xC3\xA9"}), HasSubstr("model.layers"));
}

}  // namespace
}  // namespace trident
