// The table-driven command-line parser: declared options, required options, lists,
// choices, positional counts, --set, --help, and the help texts it writes.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <string>  // std::string
#include <vector>  // std::vector

#include "cli/args.h"  // parse_args, help_text, overview_text, find_command

namespace trident::cli {
namespace {

// A command shaped like `trident eval`: required options, a flag, a list, a choice, and
// up to one positional argument.
const CommandSpec kSpec{"demo",
                        "trident demo --data FILE --sequences K [NAME]",
                        "Demonstrates the parser.",
                        {{"data", "FILE", "token file", true},
                         {"sequences", "K", "number of windows", true},
                         {"verify", "", "check checksums"},
                         {"in", "FILE...", "text files", false, true},
                         {"schedule", "NAME", "1f1b or gpipe", false, false, {"1f1b", "gpipe"}}},
                        0,
                        1,
                        "NAME"};

// `trident demo2 CONFIG`: one positional argument, no config overrides.
const CommandSpec kNoConfig{"demo2", "trident demo2 CONFIG", "Reads CONFIG.", {}, 1, 1, "CONFIG",
                            false};

// The message of the UsageError that parsing `argv` throws ("" if it throws none).
std::string usage_error(const CommandSpec& spec, const std::vector<std::string>& argv) {
  try {
    parse_args(spec, argv);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(ParseArgs, options_flags_lists_sets_and_positional) {
  const Args a = parse_args(
      kSpec, {"--data", "t.bin", "--sequences=12", "--verify", "--in", "a", "b", "--set",
              "train.steps=3", "--in=c", "--set=model.layers=2", "--schedule", "gpipe", "run1"});
  EXPECT_EQ(a.get("data"), "t.bin");
  EXPECT_EQ(a.get_int("sequences", 0), 12);
  EXPECT_EQ(a.get("verify"), "1");
  EXPECT_EQ(a.lists.at("in"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(a.sets, (std::vector<std::string>{"train.steps=3", "model.layers=2"}));
  EXPECT_EQ(a.get("schedule"), "gpipe");
  EXPECT_EQ(a.positional, (std::vector<std::string>{"run1"}));
  EXPECT_FALSE(a.help);
  EXPECT_FALSE(a.has("absent"));
  EXPECT_EQ(a.get("absent", "fallback"), "fallback");
}

TEST(ParseArgs, missing_required_options_are_named) {
  EXPECT_EQ(usage_error(kSpec, {"--data", "t.bin"}),
            "--sequences is required (see trident demo --help)");
  EXPECT_EQ(usage_error(kSpec, {}),
            "--data and --sequences are required (see trident demo --help)");
  EXPECT_EQ(usage_error(kSpec, {"--data=", "--sequences", "1"}),
            "--data is required (see trident demo --help)")
      << "an empty value is no value";
}

TEST(ParseArgs, unknown_option_lists_the_valid_ones) {
  EXPECT_EQ(usage_error(kSpec, {"--data", "t", "--sequences", "1", "--verbose"}),
            "unknown option --verbose; valid options: --data --sequences --verify --in "
            "--schedule --set --help");
  EXPECT_EQ(usage_error(kNoConfig, {"c.toml", "--world", "2"}),
            "unknown option --world; valid options: --help");
}

TEST(ParseArgs, positional_counts) {
  EXPECT_EQ(usage_error(kNoConfig, {}), "missing CONFIG (see trident demo2 --help)");
  EXPECT_EQ(usage_error(kNoConfig, {"a.toml", "b.toml"}),
            "unexpected argument 'b.toml' (see trident demo2 --help)");
  EXPECT_EQ(usage_error(kSpec, {"--data", "t", "--sequences", "1", "x", "y"}),
            "unexpected argument 'y' (see trident demo --help)");
  EXPECT_EQ(parse_args(kNoConfig, {"a.toml"}).positional, (std::vector<std::string>{"a.toml"}));
}

TEST(ParseArgs, values_lists_and_choices_are_checked) {
  EXPECT_EQ(usage_error(kSpec, {"--sequences", "1", "--data"}), "--data needs a value (FILE)");
  EXPECT_EQ(usage_error(kSpec, {"--data", "t", "--sequences", "1", "--in", "--verify"}),
            "--in needs at least one FILE");
  EXPECT_EQ(usage_error(kSpec, {"--data", "t", "--sequences", "1", "--schedule", "zb"}),
            "--schedule must be 1f1b or gpipe, got 'zb'");
  EXPECT_EQ(usage_error(kSpec, {"--data", "t", "--sequences", "1", "--set"}),
            "--set needs section.key=value");
  EXPECT_EQ(usage_error(kNoConfig, {"c.toml", "--set", "a.b=1"}),
            "demo2 reads no config, so --set has nothing to set");
}

TEST(ParseArgs, help_skips_the_completeness_checks) {
  EXPECT_TRUE(parse_args(kSpec, {"--help"}).help);
  EXPECT_TRUE(parse_args(kNoConfig, {"-h"}).help) << "no CONFIG needed with -h";
  EXPECT_EQ(usage_error(kSpec, {"--help", "--nosuch"}),
            "unknown option --nosuch; valid options: --data --sequences --verify --in "
            "--schedule --set --help")
      << "an unknown option is still an error";
}

TEST(ArgsValues, integers_and_positive_numbers) {
  const Args a = parse_args(kSpec, {"--data", "t", "--sequences", "0", "--schedule", "1f1b"});
  EXPECT_EQ(a.get_int("sequences", 5), 0);
  EXPECT_EQ(a.get_int("absent", 5), 5);
  try {
    a.get_positive_int("sequences", 1);
    ADD_FAILURE() << "0 accepted as a positive integer";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--sequences expects a positive integer, got '0'");
  }
  Args b;
  b.options = {{"pp", "3"}, {"x", "2x"}, {"cost", "0.5"}, {"neg", "-1"}, {"inf", "inf"}};
  EXPECT_EQ(b.get_positive_int("pp", 1), 3);
  EXPECT_EQ(b.get_positive_int("absent", 7), 7);
  EXPECT_THROW(b.get_positive_int("x", 1), UsageError);
  EXPECT_THROW(b.get_int("x", 1), UsageError);
  EXPECT_DOUBLE_EQ(b.get_positive_double("cost", 1.0), 0.5);
  EXPECT_DOUBLE_EQ(b.get_positive_double("absent", 2.0), 2.0);
  EXPECT_THROW(b.get_positive_double("neg", 1.0), UsageError);
  EXPECT_THROW(b.get_positive_double("inf", 1.0), UsageError);
}

TEST(UsageErrorType, is_an_input_error) {
  try {
    parse_args(kNoConfig, {});
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "missing CONFIG (see trident demo2 --help)");
  }
}

TEST(HelpText, generated_from_the_spec) {
  EXPECT_EQ(help_text(kNoConfig),
            "usage: trident demo2 CONFIG\n\nReads CONFIG.\n\noptions:\n"
            "  --help                      show this help\n");
  const std::string text = help_text(kSpec);
  EXPECT_NE(text.find("  --data FILE                 token file (required)\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  --verify                    check checksums\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  --set section.key=value     override a config key (repeatable)\n"),
            std::string::npos)
      << text;
}

int run_nothing(const Args&) { return 0; }

TEST(Overview, one_line_per_command_and_lookup_by_name) {
  const std::vector<Command> commands = {{kSpec, false, "demonstrate", run_nothing},
                                         {kNoConfig, true, "read a config", run_nothing}};
  EXPECT_EQ(overview_text(commands),
            "usage: trident SUBCOMMAND [options]   (trident SUBCOMMAND --help)\n\n"
            "  demo          demonstrate\n"
            "  demo2         read a config\n");
  ASSERT_NE(find_command(commands, "demo2"), nullptr);
  EXPECT_TRUE(find_command(commands, "demo2")->uses_mpi);
  EXPECT_EQ(find_command(commands, "nosuch"), nullptr);
}

}  // namespace
}  // namespace trident::cli
