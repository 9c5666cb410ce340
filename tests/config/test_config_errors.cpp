// Every kind of config error, with the message the user sees: the key, the file and
// line (or the --set it came from) and what would be valid.
#include <gmock/gmock.h>  // EXPECT_THAT, HasSubstr
#include <gtest/gtest.h>

#include "config/config.h"
#include "config_test_util.h"

namespace trident {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_config::error_of;

TEST(ConfigErrors, unknown_key_suggests_nearest_key) {
  const std::string text = "# a tiny model\n\n[model]\nlayers = 2\nhiden = 64\n";
  EXPECT_THAT(
      error_of(text),
      HasSubstr("configs/x.toml:5: unknown key 'model.hiden'; did you mean 'model.hidden'?"));
}

TEST(ConfigErrors, unknown_key_in_wrong_section_suggests_the_right_section) {
  EXPECT_THAT(error_of("[model]\nlr = 0.1\n"),
              HasSubstr("configs/x.toml:2: unknown key 'model.lr'; did you mean 'optimizer.lr'?"));
}

TEST(ConfigErrors, unknown_key_far_from_any_lists_the_sections_keys) {
  EXPECT_THAT(error_of("[parallel]\nexpert_parallel = 2\n"),
              HasSubstr("configs/x.toml:2: unknown key 'parallel.expert_parallel'; valid keys "
                        "in [parallel]: auto, dp, pp, tp, ep, cp, zero_stage,"));
}

TEST(ConfigErrors, key_outside_any_section_suggests_its_section) {
  EXPECT_THAT(error_of("layers = 4\n"),
              HasSubstr("configs/x.toml:1: unknown key 'layers'; did you mean 'model.layers'?"));
}

TEST(ConfigErrors, unknown_section_suggests_nearest) {
  EXPECT_THAT(error_of("[train]\nsteps = 3\n\n[modle]\nlayers = 2\n"),
              HasSubstr("configs/x.toml:4: unknown section '[modle]'; did you mean '[model]'?"));
  EXPECT_THAT(error_of("[zzz]\n"), HasSubstr("valid sections: model, parallel, train"));
}

TEST(ConfigErrors, wrong_type_names_the_expected_type) {
  EXPECT_THAT(error_of("[model]\n\nlayers = \"four\"\n"),
              HasSubstr("configs/x.toml:3: model.layers must be an integer, got string \"four\""));
  EXPECT_THAT(error_of("[model]\nlayers = 4.5\n"),
              HasSubstr("configs/x.toml:2: model.layers must be an integer, got float 4.5"));
  EXPECT_THAT(error_of("[optimizer]\nlr = \"fast\"\n"),
              HasSubstr("optimizer.lr must be a float (or an integer), got string \"fast\""));
  EXPECT_THAT(error_of("[train]\nprecision = 32\n"),
              HasSubstr("configs/x.toml:2: train.precision must be a string, got integer 32"));
  EXPECT_THAT(error_of("[model]\nlayers = [1, 2]\n"),
              HasSubstr("model.layers must be an integer, got an array"));
  EXPECT_THAT(error_of("model = 3\n"),
              HasSubstr("configs/x.toml:1: 'model' must be a table ([model]), got integer 3"));
}

TEST(ConfigErrors, out_of_range_names_the_valid_range) {
  EXPECT_THAT(error_of("[model]\nlayers = 0\n"),
              HasSubstr("configs/x.toml:2: model.layers = 0 is not valid; it must be >= 1"));
  EXPECT_THAT(error_of("[optimizer]\nlr = 0.0\n"),
              HasSubstr("configs/x.toml:2: optimizer.lr = 0.0 is not valid; it must be > 0"));
  EXPECT_THAT(error_of("[optimizer]\nbeta2 = 1.0\n"),
              HasSubstr("optimizer.beta2 = 1.0 is not valid; it must be in [0, 1)"));
  EXPECT_THAT(error_of("[optimizer]\nlr = inf\n"), HasSubstr("optimizer.lr = inf is not valid"));
}

TEST(ConfigErrors, choice_not_in_list_names_the_choices) {
  EXPECT_THAT(error_of("[parallel]\nschedule = \"interleaved\"\n"),
              HasSubstr("configs/x.toml:2: parallel.schedule = \"interleaved\" is not valid; it "
                        "must be one of \"gpipe\", \"1f1b\", \"interleaved-1f1b\", \"zb-h1\""));
  EXPECT_THAT(error_of("[parallel]\nzero_stage = 4\n"),
              HasSubstr("parallel.zero_stage = 4 is not valid; it must be one of 0, 1, 2, 3"));
  EXPECT_THAT(error_of("[parallel]\nzero3_prefetch = \"yes\"\n"),
              HasSubstr("parallel.zero3_prefetch = \"yes\" is not valid; it must be one of "
                        "\"on\", \"off\""));
  EXPECT_THAT(error_of("[train]\nprecision = \"fp16\"\n"),
              HasSubstr("it must be one of \"fp64\", \"fp32\", \"bf16\""));
  EXPECT_THAT(error_of("[parallel]\nactivation_checkpointing = \"some\"\n"),
              HasSubstr("one of \"none\", \"selective\", \"full\""));
  EXPECT_THAT(error_of("[parallel]\ngrad_reduce_dtype = \"fp16\"\n"),
              HasSubstr("one of \"fp32\", \"bf16\""));
}

TEST(ConfigErrors, sequence_parallel_needs_tp_and_a_divisible_sequence) {
  EXPECT_THAT(error_of("[parallel]\nsequence_parallel = true\n"),
              HasSubstr("configs/x.toml:2: parallel.sequence_parallel = true needs parallel.tp > "
                        "1 (it splits the sequence over the tensor-parallel ranks), but "
                        "parallel.tp = 1; set tp to 2 or more, or sequence_parallel = false"));
  EXPECT_THAT(error_of("[model]\nseq_len = 30\nheads = 4\n[parallel]\ntp = 4\n"
                       "sequence_parallel = true\n"),
              HasSubstr("configs/x.toml:2: parallel.sequence_parallel = true splits the sequence "
                        "over parallel.tp = 4 ranks, but model.seq_len = 30 is not divisible by "
                        "it; use a seq_len that is a multiple of 4, or sequence_parallel = false"));
}

TEST(ConfigErrors, hidden_not_divisible_by_heads) {
  EXPECT_THAT(error_of("[model]\nhidden = 100\nheads = 8\n"),
              HasSubstr("configs/x.toml:2: model.hidden = 100 is not divisible by model.heads = "
                        "8; use heads in {1, 2, 4, 5, 10, 20, 25, 50, 100} or change hidden"));
}

TEST(ConfigErrors, heads_not_divisible_by_tp) {
  EXPECT_THAT(error_of("[model]\nheads = 6\nhidden = 60\n[parallel]\ntp = 4\n"),
              HasSubstr("configs/x.toml:2: model.heads = 6 is not divisible by parallel.tp = 4; "
                        "use tp in {1, 2, 3, 6} or change heads"));
}

TEST(ConfigErrors, layers_not_divisible_by_pp) {
  EXPECT_THAT(error_of("[model]\nlayers = 6\n[parallel]\npp = 4\n"),
              HasSubstr("configs/x.toml:2: model.layers = 6 is not divisible by parallel.pp = 4; "
                        "use pp in {1, 2, 3, 6} or change layers"));
}

TEST(ConfigErrors, global_batch_not_divisible_by_micro_batch_times_dp) {
  EXPECT_THAT(error_of("[train]\nmicro_batch_size = 2\nglobal_batch_size = 10\n", {}, 2),
              HasSubstr("configs/x.toml:3: train.global_batch_size = 10 is not divisible by "
                        "train.micro_batch_size * parallel.dp = 2 * 2 = 4; use a multiple of "
                        "4, e.g. 8 or 12"));
}

TEST(ConfigErrors, virtual_stages_need_interleaved_1f1b_and_must_divide_the_layers) {
  EXPECT_THAT(error_of("[parallel]\npp = 2\nvirtual_stages = 2\n", {}, 2),
              HasSubstr("configs/x.toml:3: parallel.virtual_stages = 2 needs parallel.schedule = "
                        "\"interleaved-1f1b\"; set it to 1 or change the schedule"));
  EXPECT_THAT(error_of("[model]\nlayers = 4\n[parallel]\npp = 2\nschedule = \"interleaved-1f1b\"\n"
                       "virtual_stages = 4\n",
                       {}, 2),
              HasSubstr("configs/x.toml:6: model.layers = 4 is not divisible by parallel.pp * "
                        "parallel.virtual_stages = 2 * 4 = 8; use virtual_stages in {1, 2} or "
                        "change layers"));
  EXPECT_THAT(error_of("[parallel]\nschedule = \"interleaved-1f1b\"\n", {}, 1),
              HasSubstr("configs/x.toml:2: parallel.schedule = \"interleaved-1f1b\" needs "
                        "parallel.pp >= 2, got 1"));
  EXPECT_THAT(error_of("[parallel]\npp = 2\nzero_stage = 3\nschedule = \"zb-h1\"\n", {}, 2),
              HasSubstr("parallel.zero_stage = 3 does not run with parallel.schedule = \"zb-h1\""));
}

TEST(ConfigErrors, interleaved_micro_batches_run_in_rounds_of_pp) {
  // pp 4, dp 1: 8 / 2 = 4 micro-batches is fine, 8 / 4 = 2 is not.
  const std::string text =
      "[model]\nlayers = 8\n[parallel]\npp = 4\nschedule = \"interleaved-1f1b\"\n"
      "virtual_stages = 2\n[train]\nglobal_batch_size = 8\nmicro_batch_size = 4\n";
  EXPECT_THAT(error_of(text, {}, 4),
              HasSubstr("configs/x.toml:8: train.global_batch_size = 8 gives 2 micro-batches per "
                        "step (global_batch_size / (micro_batch_size * dp)), but parallel.schedule "
                        "= \"interleaved-1f1b\" runs them in rounds of parallel.pp = 4; make that "
                        "count a multiple of 4"));
  EXPECT_NO_THROW(parse_config(text, "configs/x.toml", {"train.micro_batch_size=1"}, 4));
}

TEST(ConfigErrors, layout_does_not_match_world_size_dp2_pp2_tp2_world4) {
  EXPECT_THAT(error_of("[parallel]\ndp = 2\npp = 2\ntp = 2\n", {}, 4),
              HasSubstr("configs/x.toml:2: parallel.dp * parallel.pp * parallel.tp = 2 * 2 * 2 "
                        "= 8 does not match the world size 4; run with 8 ranks, or set "
                        "parallel.dp = 1 (or 0 to derive it)"));
}

TEST(ConfigErrors, dp_cannot_be_derived_when_world_is_not_a_multiple_pp2_tp2_world6) {
  EXPECT_THAT(error_of("[parallel]\npp = 2\ntp = 2\n", {}, 6),
              HasSubstr("configs/x.toml: cannot derive parallel.dp: the world size 6 is not "
                        "divisible by parallel.pp * parallel.tp = 2 * 2 = 4; run on a multiple "
                        "of 4 ranks or change pp/tp"));
}

TEST(ConfigErrors, min_lr_above_lr) {
  EXPECT_THAT(error_of("[optimizer]\nlr = 1e-3\nmin_lr = 1e-2\n"),
              HasSubstr("configs/x.toml:3: optimizer.min_lr = 0.01 is larger than optimizer.lr "
                        "= 0.001; min_lr must be <= lr"));
}

TEST(ConfigErrors, stop_at_past_steps) {
  EXPECT_THAT(error_of("[train]\nsteps = 200\nstop_at = 300\n"),
              HasSubstr("configs/x.toml:3: train.stop_at = 300 is past train.steps = 200; use "
                        "stop_at in [0, 200] (0 runs to steps)"));
}

TEST(ConfigErrors, save_initial_without_a_checkpoint_dir) {
  EXPECT_THAT(error_of("[checkpoint]\nsave_initial = true\n"),
              HasSubstr("configs/x.toml:2: checkpoint.save_initial = true but checkpoint.dir is "
                        "empty, so nothing would be saved; set checkpoint.dir or remove "
                        "save_initial"));
  EXPECT_EQ(error_of("[checkpoint]\nsave_initial = true\ndir = \"ck\"\n"), "");
}

TEST(ConfigErrors, malformed_override) {
  EXPECT_THAT(error_of("", {"model.layers"}),
              HasSubstr("--set 'model.layers': expected section.key=value, e.g. --set "
                        "model.layers=4"));
  EXPECT_THAT(error_of("", {"layers=4"}),
              HasSubstr("--set 'layers=4': expected section.key=value"));
}

TEST(ConfigErrors, override_errors_say_they_came_from_set) {
  EXPECT_THAT(error_of("", {"model.hiden=32"}),
              HasSubstr("--set model.hiden=32: unknown key 'model.hiden'; did you mean "
                        "'model.hidden'?"));
  EXPECT_THAT(
      error_of("", {"modle.layers=2"}),
      HasSubstr("--set modle.layers=2: unknown section '[modle]'; did you mean '[model]'?"));
  EXPECT_THAT(error_of("", {"model.layers=four"}),
              HasSubstr("--set model.layers=four: model.layers must be an integer, got string "
                        "\"four\""));
  EXPECT_THAT(error_of("[model]\nlayers = 2\n", {"model.layers=0"}),
              HasSubstr("--set model.layers=0: model.layers = 0 is not valid; it must be >= 1"));
  EXPECT_THAT(error_of("[model]\nlayers = 6\n", {"parallel.pp=4"}),
              HasSubstr("configs/x.toml:2: model.layers = 6 is not divisible by parallel.pp = 4"));
}

TEST(ConfigErrors, missing_file_names_the_path) {
  try {
    load_config("/nonexistent/dir/run.toml", {}, 1);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_THAT(std::string(e.what()),
                HasSubstr("/nonexistent/dir/run.toml: cannot open the config file: No such file"));
  }
}

TEST(ConfigErrors, toml_syntax_error_names_file_and_line) {
  const std::string message = error_of("[model]\nlayers = 4\nhidden = = 64\n");
  EXPECT_THAT(message, HasSubstr("configs/x.toml:3:"));
  EXPECT_THAT(message, HasSubstr("TOML syntax error"));
  EXPECT_THAT(error_of("[model]\nlayers = 4\nlayers = 5\n"), HasSubstr("configs/x.toml:3:"));
}

TEST(ConfigErrors, all_key_errors_are_reported_together) {
  const std::string message = error_of("[model]\nhiden = 1\nlayers = 0\n[train]\nsteps = \"x\"\n");
  EXPECT_THAT(message, HasSubstr("configs/x.toml:2: unknown key 'model.hiden'"));
  EXPECT_THAT(message, HasSubstr("configs/x.toml:5: train.steps must be an integer"));
  EXPECT_THAT(message, Not(HasSubstr("is not divisible")));
}

}  // namespace
}  // namespace trident
