// Tests of the evaluation set: the held-out windows spread evenly and split by weight, a
// separate evaluation file, fresh synthetic draws, and the refusals (a training file as
// eval.source, more sequences than windows).
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <cstdint>  // int32_t, int64_t
#include <string>   // std::string
#include <vector>   // std::vector

#include "data/eval_set.h"      // open_eval_set, EvalSet
#include "data/token_source.h"  // open_source, fill_batch
#include "data_test_util.h"     // TempDir, write_*, error_of

namespace trident::data {
namespace {

using namespace test_util;  // TempDir, write_*, error_of

constexpr int64_t kT = 8;

std::vector<uint16_t> pattern(int64_t windows, int salt) {
  std::vector<uint16_t> tokens(static_cast<size_t>(windows * kT + 1));
  for (size_t p = 0; p < tokens.size(); ++p)
    tokens[p] = static_cast<uint16_t>((p * 3 + salt) % 500);
  return tokens;
}

EvalSetOptions held_out(const std::string& path, double fraction, int64_t sequences) {
  EvalSetOptions o;
  o.train = SourceOptions{path, 500, kT, 1234};
  o.train.global_batch = 4;
  o.train.valid_fraction = fraction;
  o.sequences = sequences;
  return o;
}

std::vector<int64_t> offsets(const EvalSet& set) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < set.size(); ++i) out.push_back(set.at(i).offset);
  return out;
}

TEST(EvalSet, held_out_windows_are_spread_evenly_and_read_from_the_file) {
  TempDir dir;
  const std::vector<uint16_t> tokens = pattern(100, 0);
  write_llmc(dir / "a.bin", tokens);
  // 100 windows, the last 20 held out; 5 sequences take windows 80, 84, 88, 92, 96.
  const EvalSet set = open_eval_set(held_out(dir / "a.bin", 0.2, 5));
  EXPECT_EQ(set.size(), 5);
  EXPECT_EQ(offsets(set), (std::vector<int64_t>{80 * kT, 84 * kT, 88 * kT, 92 * kT, 96 * kT}));
  EXPECT_EQ(set.source_names(), std::vector<std::string>{"a"});
  EXPECT_EQ(set.describe(), "5 sequences of held-out windows (data.valid_fraction)");
  std::vector<int32_t> seq(kT + 1);
  set.sequence(3, kT + 1, seq.data());
  for (int64_t t = 0; t <= kT; ++t) EXPECT_EQ(seq[t], tokens[92 * kT + t]);
  // Twenty sequences take every held-out window once; a copy reads the same.
  const EvalSet all = open_eval_set(held_out(dir / "a.bin", 0.2, 20));
  const EvalSet copy = all;
  for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(copy.at(i).offset, (80 + i) * kT);
  EXPECT_EQ(error_of([&] { open_eval_set(held_out(dir / "a.bin", 0.2, 21)); }),
            "eval.sequences = 21 takes 21 windows of data.source (\"a\", " + (dir / "a.bin") +
                "), which has only 20 held-out windows of seq_len = 8 tokens; raise "
                "data.valid_fraction, lower eval.sequences, or set eval.source to a file of its "
                "own");
  EXPECT_EQ(open_eval_set(held_out(dir / "a.bin", 0.2, 0)).size(), 0);
}

TEST(EvalSet, a_mixture_splits_the_set_by_weight_over_each_sources_held_out_part) {
  TempDir dir;
  write_llmc(dir / "a.bin", pattern(100, 0));
  write_llmc(dir / "b.bin", pattern(40, 1));
  EvalSetOptions o = held_out("", 0.1, 10);
  o.train.mix = {{dir / "a.bin", 0.7, "web", ""}, {dir / "b.bin", 0.3, "code", ""}};
  const EvalSet set = open_eval_set(o);
  EXPECT_EQ(set.source_names(), (std::vector<std::string>{"web", "code"}));
  EXPECT_EQ(set.describe(),
            "10 sequences of held-out windows (data.valid_fraction): 7 of web, 3 of code");
  // The 7/3 period is 0 1 0 0 0 1 0 0 1 0; web's 10 held-out windows are 90..99 and its 7
  // sequences take 90 + floor(j * 10 / 7); code's 4 are 36..39, its 3 take 36 + floor(j * 4 / 3).
  const std::vector<int> sources = {0, 1, 0, 0, 0, 1, 0, 0, 1, 0};
  const std::vector<int64_t> windows = {90, 36, 91, 92, 94, 37, 95, 97, 38, 98};
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(set.source_of(i), sources[static_cast<size_t>(i)]) << i;
    EXPECT_EQ(set.at(i).offset, windows[static_cast<size_t>(i)] * kT) << i;
  }
}

TEST(EvalSet, a_separate_file_is_read_whole_and_a_training_file_is_refused) {
  TempDir dir;
  write_llmc(dir / "train.bin", pattern(50, 0));
  write_raw(dir / "valid.bin", pattern(12, 2));
  EvalSetOptions o = held_out(dir / "train.bin", 0, 4);
  o.source = dir / "valid.bin";
  const EvalSet set = open_eval_set(o);
  EXPECT_EQ(offsets(set), (std::vector<int64_t>{0, 3 * kT, 6 * kT, 9 * kT}));
  EXPECT_EQ(set.source_names(), std::vector<std::string>{"valid"});
  // The training file under another spelling of its path is still the training file.
  o.source = dir / "./train.bin";
  EXPECT_EQ(error_of([&] { open_eval_set(o); }),
            "eval.source = \"" + (dir / "./train.bin") +
                "\" is also a training file (data.source), so the evaluation would measure "
                "windows the run trains on; leave eval.source empty and set "
                "data.valid_fraction (e.g. 0.01) to hold out the last windows of each training "
                "file, or give a file the run does not train on");
  // Without held-out windows and without eval.source there is nothing to evaluate on.
  EXPECT_NE(error_of([&] {
              open_eval_set(held_out(dir / "train.bin", 0, 4));
            }).find("which has no held-out windows (data.valid_fraction = 0)"),
            std::string::npos);
}

TEST(EvalSet, synthetic_data_evaluates_on_draws_no_step_makes) {
  EvalSetOptions o;
  o.train = SourceOptions{"synthetic", 64, kT, 99, 4};
  o.sequences = 6;
  const EvalSet a = open_eval_set(o), b = open_eval_set(o);
  EXPECT_EQ(a.size(), 6);
  EXPECT_EQ(a.source_names(), std::vector<std::string>{"synthetic"});
  const auto train = open_source(o.train);
  std::vector<int32_t> x(kT + 1), y(kT + 1), z(kT + 1);
  for (int64_t i = 0; i < 6; ++i) {
    a.sequence(i, kT + 1, x.data());
    b.sequence(i, kT + 1, y.data());
    train->sequence(0, i, kT + 1, z.data());
    EXPECT_EQ(x, y);
    EXPECT_NE(x, z);
    EXPECT_EQ(a.at(i).offset, -1);
  }
}

}  // namespace
}  // namespace trident::data
