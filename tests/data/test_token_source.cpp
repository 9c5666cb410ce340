// Tests of the trainer's view of data: step s's batch is a pure function of (seed, s),
// any slicing of it gives the same sequences, file windows follow the documented
// formula, the synthetic loss floor is the achieved loss, and open_source's errors.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <algorithm>  // std::min, std::max
#include <cmath>      // std::log, std::sqrt
#include <cstdint>    // int32_t, int64_t
#include <vector>     // std::vector

#include "common/counter_rng.h"  // random_u64
#include "data/markov_chain.h"   // MarkovChain
#include "data/token_source.h"   // open_source, fill_batch, sequence_key
#include "data_test_util.h"      // TempDir, write_*, error_of

namespace trident::data {
namespace {

using namespace test_util;  // TempDir, write_*, error_of

SourceOptions synthetic(int64_t vocab = 256, int64_t seq_len = 32, uint64_t seed = 1234) {
  return {"synthetic", vocab, seq_len, seed, 8};
}

/// One token file read as `order`, batches of `global_batch` sequences.
SourceOptions file(const std::string& path, int64_t vocab, int64_t seq_len, uint64_t seed,
                   DataOrder order = DataOrder::kEpochs, int64_t global_batch = 8) {
  SourceOptions o{path, vocab, seq_len, seed};
  o.order = order;
  o.global_batch = global_batch;
  return o;
}

std::vector<int32_t> batch(const TokenSource& s, int64_t step, int64_t first, int64_t count,
                           int64_t seq_len) {
  std::vector<int32_t> out(count * (seq_len + 1));
  fill_batch(s, step, first, count, seq_len, out.data());
  return out;
}

TEST(TokenSource, synthetic_sequence_is_pure_function_of_seed_step_index) {
  const auto a = open_source(synthetic()), b = open_source(synthetic());
  const auto other_seed = open_source(synthetic(256, 32, 99));
  EXPECT_EQ(batch(*a, 7, 3, 1, 32), batch(*b, 7, 3, 1, 32));
  EXPECT_NE(batch(*a, 7, 3, 1, 32), batch(*a, 8, 3, 1, 32));  // another step
  EXPECT_NE(batch(*a, 7, 3, 1, 32), batch(*a, 7, 4, 1, 32));  // another index
  EXPECT_NE(batch(*a, 7, 3, 1, 32), batch(*other_seed, 7, 3, 1, 32));
  // The first tokens of a sequence do not depend on how long it is drawn.
  std::vector<int32_t> short_seq(9), long_seq(33);
  a->sequence(7, 3, 9, short_seq.data());
  a->sequence(7, 3, 33, long_seq.data());
  EXPECT_EQ(short_seq, std::vector<int32_t>(long_seq.begin(), long_seq.begin() + 9));
}

TEST(TokenSource, dp1_mb1_and_dp2_mb4_and_dp4_mb2_slice_the_same_global_batch) {
  const auto src = open_source(synthetic());
  const int64_t G = 16, T = 32, row = T + 1;
  const std::vector<int32_t> whole = batch(*src, 5, 0, G, T);
  for (int64_t dp : {2, 4}) {
    const int64_t per_rank = G / dp, micro_batches = dp == 2 ? 4 : 2;
    const int64_t mb = per_rank / micro_batches;
    for (int64_t rank = 0; rank < dp; ++rank) {
      for (int64_t m = 0; m < micro_batches; ++m) {
        const int64_t first = rank * per_rank + m * mb;
        const std::vector<int32_t> piece = batch(*src, 5, first, mb, T);
        EXPECT_EQ(piece, std::vector<int32_t>(whole.begin() + first * row,
                                              whole.begin() + (first + mb) * row))
            << "dp " << dp << " rank " << rank << " micro-batch " << m;
      }
    }
  }
  std::vector<int32_t> one(row);
  src->sequence(5, 11, row, one.data());
  EXPECT_EQ(one, std::vector<int32_t>(whole.begin() + 11 * row, whole.begin() + 12 * row));
}

TEST(TokenSource, synthetic_loss_floor_is_the_achieved_mean_loss) {
  const int64_t V = 128, T = 64, G = 4096;
  const auto src = open_source(synthetic(V, T, 31));
  const MarkovChain chain(V, 8, 31);  // the same chain: a pure function of the seed
  ASSERT_TRUE(src->loss_floor().has_value());
  EXPECT_EQ(*src->loss_floor(), chain.entropy_rate());
  // Mean -log P(target | previous) per sequence: sequences are independent.
  const std::vector<int32_t> b = batch(*src, 0, 0, G, T);
  double sum = 0, sum2 = 0;
  for (int64_t g = 0; g < G; ++g) {
    double loss = 0;
    for (int64_t t = 0; t < T; ++t) {
      loss -= std::log(chain.probability(b[g * (T + 1) + t], b[g * (T + 1) + t + 1]));
    }
    loss /= T;
    sum += loss;
    sum2 += loss * loss;
  }
  const double mean = sum / G, se = std::sqrt((sum2 / G - mean * mean) / (G - 1));
  EXPECT_LT(se, 0.005);
  EXPECT_NEAR(mean, chain.entropy_rate(), 4 * se);
}

TEST(TokenSource, windows_order_draws_the_documented_offsets) {
  TempDir dir;
  const int64_t n = 5000, T = 16;
  std::vector<uint16_t> tokens(n);
  for (int64_t k = 0; k < n; ++k) tokens[k] = static_cast<uint16_t>((k * 7) % 1000);
  write_llmc(dir / "shard.bin", tokens);
  const auto src = open_source(file(dir / "shard.bin", 1000, T, 42, DataOrder::kWindows, 400));
  EXPECT_FALSE(src->loss_floor().has_value());
  int64_t lowest = n, highest = 0;
  for (int64_t i = 0; i < 400; ++i) {
    std::vector<int32_t> seq(T + 1);
    src->sequence(3, i, T + 1, seq.data());
    const int64_t offset =
        static_cast<int64_t>(random_u64(sequence_key(42, 3, i), 0) % (n - (T + 1) + 1));
    for (int64_t t = 0; t <= T; ++t) ASSERT_EQ(seq[t], tokens[offset + t]) << "sequence " << i;
    ASSERT_EQ(src->origin(3, i).offset, offset);
    ASSERT_EQ(src->origin(3, i).window, -1);
    lowest = std::min(lowest, offset);
    highest = std::max(highest, offset);
  }
  EXPECT_LT(lowest, 100);  // windows cover the whole file
  EXPECT_GT(highest, n - (T + 1) - 100);
  const auto again = open_source(file(dir / "shard.bin", 1000, T, 42, DataOrder::kWindows, 400));
  EXPECT_EQ(batch(*src, 9, 0, 8, T), batch(*again, 9, 0, 8, T));
  EXPECT_NE(batch(*src, 9, 0, 8, T), batch(*src, 10, 0, 8, T));
}

TEST(TokenSource, describe_names_source_and_size) {
  TempDir dir;
  write_llmc(dir / "a.bin", std::vector<uint16_t>(35567, 1));
  write_raw(dir / "train.bin", std::vector<uint16_t>(2048, 2));
  write_megatron<uint16_t>(dir / "m", {std::vector<int64_t>(100, 3), std::vector<int64_t>(50, 4)},
                           8);
  EXPECT_EQ(
      open_source(file(dir / "a.bin", 50257, 64, 0))->describe(),
      "llm.c shard " + (dir / "a.bin") + ": 35,567 tokens, 555 windows of 64; read in epochs");
  EXPECT_EQ(open_source(file(dir / "train.bin", 50257, 64, 0, DataOrder::kWindows))->describe(),
            "raw uint16 tokens " + (dir / "train.bin") +
                ": 2,048 tokens, 31 windows of 64; windows drawn with replacement");
  SourceOptions held = file(dir / "train.bin", 50257, 64, 0);
  held.valid_fraction = 0.1;
  EXPECT_EQ(open_source(held)->describe(),
            "raw uint16 tokens " + (dir / "train.bin") +
                ": 2,048 tokens, 31 windows of 64, the last 3 held out; read in epochs");
  EXPECT_EQ(open_source(file(dir / "m", 50257, 64, 0))->describe(),
            "Megatron dataset " + (dir / "m") +
                " (uint16, 3 documents): 150 tokens, 2 windows of 64; read in epochs");
  const auto syn = open_source({"synthetic", 50257, 64, 1234, 8});
  EXPECT_EQ(syn->describe().rfind("synthetic Markov chain: vocab 50,257, 8 successors per state, "
                                  "seed 1234; entropy rate (loss floor) ",
                                  0),
            0u)
      << syn->describe();
}

TEST(TokenSource, open_source_errors_name_the_file_and_the_fix) {
  TempDir dir;
  write_raw(dir / "tiny.bin", std::vector<uint16_t>(10, 5));
  EXPECT_EQ(error_of([&] { open_source(file(dir / "tiny.bin", 50257, 64, 0)); }),
            "data.source (\"tiny\"): data file " + (dir / "tiny.bin") +
                " has 10 tokens, needs at least seq_len+1 = 65 for one window; use a longer file "
                "or a shorter seq_len");
  std::vector<uint16_t> tokens(2000, 17);
  tokens[1234] = 50300;
  write_llmc(dir / "big_vocab.bin", tokens);
  EXPECT_EQ(error_of([&] { open_source(file(dir / "big_vocab.bin", 50257, 64, 0)); }),
            "data.source (\"big_vocab\"): data file " + (dir / "big_vocab.bin") +
                ": token 50300 at position 1234 is \u2265 model.vocab = 50257; set model.vocab to "
                "at least 50301");
  EXPECT_EQ(
      error_of([&] {
        open_source(file(dir / "missing.bin", 50257, 64, 0));
      }).rfind("data.source (\"missing\"): data file " + (dir / "missing.bin") + " not found;", 0),
      0u);
  write_bytes(dir / "odd.bin", std::string(999, 'x'));
  EXPECT_NE(
      error_of([&] { open_source(file(dir / "odd.bin", 50257, 64, 0)); }).find("unknown format"),
      std::string::npos);
  EXPECT_EQ(error_of([] {
              open_source({"synthetic", 100, 64, 0, 200});
            }),
            "data.markov_successors = 200 must lie in [2, model.vocab - 1 = 99]");
  EXPECT_EQ(error_of([] {
              open_source({"", 100, 64, 0});
            }),
            "data.source is empty; set it to a token file or to \"synthetic\"");
  EXPECT_EQ(error_of([] {
              open_source({"synthetic", 0, 64, 0});
            }),
            "model.vocab = 0 must be positive");
}

}  // namespace
}  // namespace trident::data
