// Tests of the mixture schedule: weights quantised by largest remainder, the smooth
// weighted round-robin period, running indices without gaps, exact shares over any 100
// steps, and the errors that name the weight.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <algorithm>  // std::max
#include <cmath>      // std::abs
#include <cstdint>    // int64_t
#include <vector>     // std::vector

#include "data/mix_schedule.h"  // MixSchedule, quantise_weights
#include "data_test_util.h"     // error_of

namespace trident::data {
namespace {

using test_util::error_of;
using Weights = std::vector<double>;
using Slots = std::vector<int64_t>;

TEST(MixSchedule, weights_become_slots_of_the_shortest_exact_period_else_thousandths) {
  EXPECT_EQ(quantise_weights({0.7, 0.3}), (Slots{7, 3}));
  EXPECT_EQ(quantise_weights({1, 1, 1}), (Slots{1, 1, 1}));
  EXPECT_EQ(quantise_weights({0.05, 0.95}), (Slots{1, 19}));
  EXPECT_EQ(quantise_weights({5, 3, 2}), (Slots{5, 3, 2}));
  EXPECT_EQ(quantise_weights({0.123, 0.456, 0.421}), (Slots{123, 456, 421}));
  EXPECT_EQ(quantise_weights({2}), (Slots{1}));
  EXPECT_EQ(quantise_weights({1, 0, 3}), (Slots{1, 0, 3}));
  EXPECT_EQ(quantise_weights({1, 2, 0.0}), (Slots{1, 2, 0}));
  EXPECT_EQ(quantise_weights(std::vector<double>(7, 0.5)), Slots(7, 1));
  // No period up to 1000 holds these: thousandths, the spare one to the largest remainder.
  EXPECT_EQ(quantise_weights({0.1234, 0.8766}), (Slots{123, 877}));
  EXPECT_EQ(quantise_weights({1, 1, 1, 1e-6}), (Slots{334, 333, 333, 0}));
}

TEST(MixSchedule, period_is_nginx_smooth_weighted_round_robin) {
  // 7/3 by hand: credits start at 0, each slot adds (7, 3), the larger (the lower index on
  // a tie) takes it and pays 10.
  EXPECT_EQ(MixSchedule({0.7, 0.3}).layout(), (std::vector<int>{0, 1, 0, 0, 0, 1, 0, 0, 1, 0}));
  EXPECT_EQ(MixSchedule({1, 1, 1}).layout(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(MixSchedule({5, 3, 2}).layout(), (std::vector<int>{0, 1, 2, 0, 0, 1, 0, 2, 1, 0}));
  EXPECT_EQ(MixSchedule({3}).period(), 1);
}

TEST(MixSchedule, running_index_counts_each_sources_sequences_without_gaps) {
  for (const Weights& w : {Weights{0.7, 0.3}, Weights{1, 1, 1}, Weights{0.05, 0.95},
                           Weights{0.123, 0.456, 0.421}, Weights{1, 0, 3}}) {
    const MixSchedule schedule(w);
    std::vector<int64_t> next(w.size(), 0);
    for (int64_t n = 0; n < 5000; ++n) {
      const MixSchedule::Pick pick = schedule.at(n);
      ASSERT_EQ(pick.index, next[static_cast<size_t>(pick.source)]++) << "n = " << n;
    }
    EXPECT_EQ(next.size(), w.size());
    for (size_t k = 0; k < w.size(); ++k) {
      if (w[k] == 0) {
        EXPECT_EQ(next[k], 0) << "a weight of 0 is never drawn";
      }
    }
  }
  // One source: every sequence is its own running index.
  const MixSchedule one({1});
  for (int64_t n : {0, 1, 7, 123456789}) EXPECT_EQ(one.at(n).index, n);
}

/// The largest |share - weight| of any source over every run of `steps` consecutive steps
/// of G sequences among the first `total` steps.
double worst_share_error(const Weights& w, int64_t G, int64_t steps, int64_t total) {
  const MixSchedule schedule(w);
  double sum = 0;
  for (const double x : w) sum += x;
  std::vector<std::vector<int64_t>> prefix(w.size(), std::vector<int64_t>(total * G + 1, 0));
  for (int64_t n = 0; n < total * G; ++n) {
    const int source = schedule.at(n).source;
    for (size_t k = 0; k < w.size(); ++k)
      prefix[k][n + 1] = prefix[k][n] + (static_cast<size_t>(source) == k ? 1 : 0);
  }
  double worst = 0;
  for (int64_t first = 0; first + steps <= total; ++first)
    for (size_t k = 0; k < w.size(); ++k) {
      const int64_t count = prefix[k][(first + steps) * G] - prefix[k][first * G];
      const double share = static_cast<double>(count) / static_cast<double>(steps * G);
      worst = std::max(worst, std::abs(share - w[k] / sum));
    }
  return worst;
}

TEST(MixSchedule, any_100_steps_give_each_source_its_weight_within_1_percent) {
  for (const Weights& w : {Weights{0.7, 0.3}, Weights{1, 1, 1}, Weights{0.05, 0.95},
                           Weights{0.6, 0.25, 0.15}, Weights{0.123, 0.456, 0.421}}) {
    for (const int64_t G : {8, 32, 512}) {
      const double worst = worst_share_error(w, G, 100, 1100);
      EXPECT_LT(worst, 0.01) << "weights " << w[0] << "/" << w[1] << ", G = " << G;
    }
  }
  // Periods that divide 100 sequences are exact even at one sequence per step.
  EXPECT_EQ(worst_share_error({0.7, 0.3}, 1, 100, 3000), 0.0);
  EXPECT_EQ(worst_share_error({0.05, 0.95}, 1, 100, 3000), 0.0);
  EXPECT_LT(worst_share_error({1, 1, 1}, 1, 100, 3000), 0.007);  // 33 or 34 of 100
  // The thousandths themselves: 0.123 of 100 steps of 8 is 98.4 sequences, and the
  // schedule gives 98 or 99 in every such run.
  EXPECT_LT(worst_share_error({0.123, 0.456, 0.421}, 8, 100, 3000), 0.0025);
}

TEST(MixSchedule, bad_weights_name_their_key) {
  EXPECT_EQ(error_of([] {
              MixSchedule({0.5, -1}, {"data.mix[0].weight", "data.mix[1].weight"});
            }),
            "data.mix[1].weight = -1 is negative; a source's weight must be >= 0");
  EXPECT_EQ(error_of([] {
              MixSchedule({0, 0});
            }),
            "the weights of the data mixture sum to 0; give at least one source a positive "
            "weight");
  EXPECT_EQ(error_of([] {
              MixSchedule({1, 0.0001}, {"a.weight", "b.weight"});
            }),
            "b.weight = 0.0001 is too small: a mixture gives each source whole thousandths of "
            "the sequences, and this share of the weights' sum rounds to none; raise it or set "
            "it to 0");
  EXPECT_EQ(error_of([] { MixSchedule({}); }), "a data mixture needs at least one source");
}

}  // namespace
}  // namespace trident::data
