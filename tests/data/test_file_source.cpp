// Tests of token files as a training source: epochs read each non-overlapping window once
// in a fresh order, held-out windows are never trained on, a mixture follows its schedule
// with its own epochs per source, origin() names what sequence() reads, and bad sources
// are refused naming their key.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <algorithm>  // std::min_element, std::max_element
#include <cstdint>    // int32_t, int64_t
#include <set>        // std::set
#include <string>     // std::string
#include <vector>     // std::vector

#include "data/mix_schedule.h"  // MixSchedule
#include "data/token_source.h"  // open_source, SequenceOrigin
#include "data_test_util.h"     // TempDir, write_*, error_of

namespace trident::data {
namespace {

using namespace test_util;  // TempDir, write_*, error_of

constexpr int64_t kT = 16;

/// A file of `windows` whole windows of kT (plus the shared last token), whose token at
/// position p is (p * 7 + salt) mod 1000, so any offset can be told from its tokens.
std::vector<uint16_t> pattern(int64_t windows, int salt) {
  std::vector<uint16_t> tokens(static_cast<size_t>(windows * kT + 1));
  for (size_t p = 0; p < tokens.size(); ++p)
    tokens[p] = static_cast<uint16_t>((p * 7 + salt) % 1000);
  return tokens;
}

SourceOptions one_file(const std::string& path, int64_t G, double valid_fraction = 0) {
  SourceOptions o{path, 1000, kT, 1234};
  o.global_batch = G;
  o.valid_fraction = valid_fraction;
  return o;
}

/// Checks that sequence (step, i) is the file's tokens at origin's offset.
void expect_tokens_at_origin(const TokenSource& s, const std::vector<std::vector<uint16_t>>& files,
                             int64_t step, int64_t i) {
  const SequenceOrigin o = s.origin(step, i);
  std::vector<int32_t> seq(kT + 1);
  s.sequence(step, i, kT + 1, seq.data());
  const std::vector<uint16_t>& f = files[static_cast<size_t>(o.source)];
  for (int64_t t = 0; t <= kT; ++t)
    ASSERT_EQ(seq[t], f[static_cast<size_t>(o.offset + t)]) << "step " << step << " seq " << i;
}

TEST(FileSource, epochs_read_every_window_once_in_a_fresh_order_each_epoch) {
  TempDir dir;
  const int64_t W = 40, G = 8;  // 5 steps per epoch
  const std::vector<uint16_t> tokens = pattern(W, 0);
  write_llmc(dir / "a.bin", tokens);
  const auto s = open_source(one_file(dir / "a.bin", G));
  EXPECT_EQ(s->source_names(), std::vector<std::string>{"a"});
  std::vector<std::vector<int64_t>> epochs(3);
  for (int64_t step = 0; step < 3 * W / G; ++step) {
    for (int64_t i = 0; i < G; ++i) {
      const SequenceOrigin o = s->origin(step, i);
      const int64_t n = step * G + i;  // one source: j = n
      EXPECT_EQ(o.source, 0);
      EXPECT_EQ(o.name, "a");
      EXPECT_EQ(o.epoch, n / W);
      EXPECT_DOUBLE_EQ(o.epoch_fraction, static_cast<double>(n) / W);
      EXPECT_EQ(o.offset, o.window * kT);
      epochs[static_cast<size_t>(o.epoch)].push_back(o.window);
      expect_tokens_at_origin(*s, {tokens}, step, i);
    }
  }
  for (const std::vector<int64_t>& e : epochs) {
    EXPECT_EQ(std::set<int64_t>(e.begin(), e.end()).size(), static_cast<size_t>(W));
    EXPECT_EQ(*std::min_element(e.begin(), e.end()), 0);
    EXPECT_EQ(*std::max_element(e.begin(), e.end()), W - 1);
  }
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
}

TEST(FileSource, held_out_windows_are_never_trained_on) {
  TempDir dir;
  write_llmc(dir / "a.bin", pattern(100, 0));
  for (const DataOrder order : {DataOrder::kEpochs, DataOrder::kWindows}) {
    SourceOptions o = one_file(dir / "a.bin", 10, 0.1);  // windows 90..99 held out
    o.order = order;
    const auto s = open_source(o);
    std::set<int64_t> windows;
    for (int64_t step = 0; step < 30; ++step) {
      for (int64_t i = 0; i < 10; ++i) {
        const SequenceOrigin origin = s->origin(step, i);
        ASSERT_LE(origin.offset + kT, 90 * kT) << "its last token is at most the first held-out "
                                                  "window's first";
        windows.insert(origin.window);
      }
    }
    if (order == DataOrder::kEpochs) {
      EXPECT_EQ(windows.size(), 90u) << "3 epochs of the 90 training windows";
    }
  }
}

TEST(FileSource, a_mixture_follows_its_schedule_with_epochs_per_source) {
  TempDir dir;
  const std::vector<uint16_t> a = pattern(30, 0), b = pattern(7, 500);
  write_llmc(dir / "a.bin", a);
  write_raw(dir / "b.bin", b);
  SourceOptions o{"", 1000, kT, 1234};
  o.global_batch = 8;
  o.mix = {{dir / "a.bin", 0.75, "web", "data.mix[0]"}, {dir / "b.bin", 0.25, "", "data.mix[1]"}};
  const auto s = open_source(o);
  EXPECT_EQ(s->source_names(), (std::vector<std::string>{"web", "b"}));
  const MixSchedule schedule({0.75, 0.25});
  std::vector<std::vector<std::vector<int64_t>>> epochs(2);  // source, epoch: windows
  for (int64_t step = 0; step < 30; ++step) {
    int from_b = 0;
    for (int64_t i = 0; i < 8; ++i) {
      const SequenceOrigin origin = s->origin(step, i);
      const MixSchedule::Pick pick = schedule.at(step * 8 + i);
      ASSERT_EQ(origin.source, pick.source);
      const int64_t W = origin.source == 0 ? 30 : 7;
      ASSERT_EQ(origin.epoch, pick.index / W);
      auto& per_epoch = epochs[static_cast<size_t>(origin.source)];
      if (per_epoch.size() <= static_cast<size_t>(origin.epoch)) per_epoch.resize(origin.epoch + 1);
      per_epoch[static_cast<size_t>(origin.epoch)].push_back(origin.window);
      from_b += origin.source;
      expect_tokens_at_origin(*s, {a, b}, step, i);
    }
    EXPECT_EQ(from_b, 2) << "3:1 gives exactly 2 of every 8 to b";
  }
  // 30 steps * 6 = 180 sequences of a (6 epochs of 30), 60 of b (8 epochs of 7, and 4).
  ASSERT_EQ(epochs[0].size(), 6u);
  ASSERT_EQ(epochs[1].size(), 9u);
  for (size_t k = 0; k < 2; ++k)
    for (size_t e = 0; e + 1 < epochs[k].size(); ++e)
      EXPECT_EQ(std::set<int64_t>(epochs[k][e].begin(), epochs[k][e].end()).size(),
                epochs[k][e].size())
          << "source " << k << " epoch " << e << " repeats a window";
}

TEST(FileSource, any_slicing_of_a_mixture_batch_reads_the_same_sequences) {
  TempDir dir;
  write_llmc(dir / "a.bin", pattern(30, 0));
  write_llmc(dir / "b.bin", pattern(9, 3));
  SourceOptions o{"", 1000, kT, 7};
  o.global_batch = 16;
  o.mix = {{dir / "a.bin", 2, "", ""}, {dir / "b.bin", 1, "", ""}};
  const auto s = open_source(o), again = open_source(o);
  std::vector<int32_t> whole(16 * (kT + 1)), piece(4 * (kT + 1));
  fill_batch(*s, 11, 0, 16, kT, whole.data());
  for (int64_t first = 0; first < 16; first += 4) {
    fill_batch(*again, 11, first, 4, kT, piece.data());
    EXPECT_EQ(piece, std::vector<int32_t>(whole.begin() + first * (kT + 1),
                                          whole.begin() + (first + 4) * (kT + 1)));
  }
}

TEST(FileSource, bad_sources_name_their_key_and_file) {
  TempDir dir;
  write_llmc(dir / "a.bin", pattern(10, 0));
  write_raw(dir / "short.bin", std::vector<uint16_t>(kT, 1));
  std::vector<uint16_t> big = pattern(10, 0);
  big[17] = 1500;
  write_raw(dir / "big.bin", big);
  auto mix = [&](const std::string& second, double w0 = 1, double w1 = 1) {
    SourceOptions o{"", 1000, kT, 1};
    o.global_batch = 4;
    o.mix = {{dir / "a.bin", w0, "", "data.mix[0]"}, {second, w1, "", "data.mix[1]"}};
    return o;
  };
  EXPECT_EQ(error_of([&] { open_source(mix(dir / "nope.bin")); }),
            "data.mix[1] (\"nope\"): data file " + (dir / "nope.bin") +
                " not found; give an existing token file (llm.c shard, Megatron .bin/.idx "
                "prefix, raw uint16)");
  EXPECT_EQ(error_of([&] { open_source(mix(dir / "short.bin")); }),
            "data.mix[1] (\"short\"): data file " + (dir / "short.bin") +
                " has 16 tokens, needs at least seq_len+1 = 17 for one window; use a longer file "
                "or a shorter seq_len");
  EXPECT_EQ(error_of([&] { open_source(mix(dir / "big.bin")); }),
            "data.mix[1] (\"big\"): data file " + (dir / "big.bin") +
                ": token 1500 at position 17 is \u2265 model.vocab = 1000; set model.vocab to at "
                "least 1501");
  EXPECT_EQ(error_of([&] { open_source(mix(dir / "big.bin", 1, -2)); }),
            "data.mix[1].weight = -2 is negative; a source's weight must be >= 0");
  EXPECT_EQ(error_of([&] { open_source(mix(dir / "big.bin", 0, 0)); }),
            "the weights of the data mixture sum to 0; give at least one source a positive "
            "weight");
  EXPECT_EQ(error_of([&] { open_source(mix(dir / "a.bin")); }),
            "data.mix[1] and data.mix[0] are both named \"a\"; give each source of a mixture its "
            "own name (name = \"...\")");
  SourceOptions held = one_file(dir / "a.bin", 4, 0.95);  // 10 windows, 9 held out: 1 left
  EXPECT_NO_THROW(open_source(held));
  write_llmc(dir / "one.bin", pattern(1, 0));  // one window, and any fraction holds out one
  held = one_file(dir / "one.bin", 4, 0.01);
  EXPECT_EQ(error_of([&] { open_source(held); }),
            "data.source (\"one\"): data file " + (dir / "one.bin") +
                " has 1 window(s) of seq_len = 16 tokens, and data.valid_fraction = 0.01 holds "
                "out 1, leaving none to train on; use a longer file or a smaller valid_fraction");
}

}  // namespace
}  // namespace trident::data
