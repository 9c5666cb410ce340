// Tests of the synthetic Markov chain: structure, the stationary distribution and the
// entropy rate against brute-force estimates from long samples.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <cmath>   // std::log, std::sqrt, std::abs
#include <set>     // std::set
#include <vector>  // std::vector

#include "common/counter_rng.h"  // hash_name
#include "data/markov_chain.h"   // MarkovChain
#include "data_test_util.h"      // error_of

namespace trident::data {
namespace {

/// Mean and batch-means standard error of `values` split into `batches` runs (the
/// batch means are nearly independent even though neighbouring values are not).
struct Estimate {
  double mean, se;
};
Estimate batch_means(const std::vector<double>& values, int batches) {
  const size_t per = values.size() / batches;
  std::vector<double> means(batches, 0.0);
  for (int b = 0; b < batches; ++b) {
    for (size_t k = 0; k < per; ++k) means[b] += values[b * per + k];
    means[b] /= static_cast<double>(per);
  }
  double mean = 0, var = 0;
  for (double m : means) mean += m / batches;
  for (double m : means) var += (m - mean) * (m - mean) / (batches - 1);
  return {mean, std::sqrt(var / batches)};
}

TEST(MarkovChain, structure_is_irreducible_without_self_loops) {
  const MarkovChain chain(100, 8, 3);
  for (int64_t i = 0; i < 100; ++i) {
    const int32_t* next = chain.next_states(i);
    const double* p = chain.next_probabilities(i);
    std::set<int32_t> distinct(next, next + 8);
    EXPECT_EQ(distinct.size(), 8u);
    EXPECT_EQ(distinct.count(static_cast<int32_t>(i)), 0u);
    EXPECT_EQ(distinct.count(static_cast<int32_t>((i + 1) % 100)), 1u);
    double total = 0;
    for (int j = 0; j < 8; ++j) {
      EXPECT_GT(p[j], 0.0);
      total += p[j];
      EXPECT_EQ(chain.probability(i, next[j]), p[j]);
    }
    EXPECT_NEAR(total, 1.0, 1e-15);
  }
  EXPECT_EQ(chain.probability(5, 5), 0.0);
  EXPECT_GT(chain.probability(0, 2), 0.0);  // the cycle of length V-1 (aperiodicity)
}

TEST(MarkovChain, same_seed_same_chain_other_seed_other_chain) {
  const MarkovChain a(300, 8, 11), b(300, 8, 11), c(300, 8, 12);
  EXPECT_EQ(a.entropy_rate(), b.entropy_rate());
  EXPECT_EQ(a.stationary(), b.stationary());
  for (int64_t i = 0; i < 300; ++i) EXPECT_EQ(a.next_states(i)[3], b.next_states(i)[3]);
  EXPECT_NE(a.entropy_rate(), c.entropy_rate());
}

TEST(MarkovChain, stationary_distribution_is_a_fixed_point) {
  const MarkovChain chain(50257, 8, 1234);  // GPT-2 vocabulary
  const std::vector<double>& pi = chain.stationary();
  std::vector<double> pi_p(pi.size(), 0.0);
  double total = 0;
  for (int64_t i = 0; i < chain.vocab(); ++i) {
    EXPECT_GT(pi[i], 0.0);
    total += pi[i];
    for (int j = 0; j < 8; ++j) {
      pi_p[chain.next_states(i)[j]] += pi[i] * chain.next_probabilities(i)[j];
    }
  }
  double residual = 0;
  for (size_t i = 0; i < pi.size(); ++i) residual += std::abs(pi_p[i] - pi[i]);
  EXPECT_NEAR(total, 1.0, 1e-12);
  EXPECT_LT(residual, 1e-13);
  EXPECT_LT(chain.power_iterations(), 1000);
  // Uneven weights: well below the entropy of a uniform choice among 8.
  EXPECT_GT(chain.entropy_rate(), 0.3 * std::log(8.0));
  EXPECT_LT(chain.entropy_rate(), 0.75 * std::log(8.0));
}

TEST(MarkovChain, entropy_rate_matches_empirical_loss_of_two_million_tokens) {
  const MarkovChain chain(512, 8, 7);
  const int64_t n = 2000000;
  std::vector<int32_t> tokens(n);
  chain.sample(hash_name(7, "test.long"), n, tokens.data());
  std::vector<double> loss(n - 1);
  for (int64_t t = 0; t + 1 < n; ++t)
    loss[t] = -std::log(chain.probability(tokens[t], tokens[t + 1]));
  const Estimate e = batch_means(loss, 200);
  EXPECT_LT(e.se, 0.003);  // the estimate is sharp enough to mean something
  EXPECT_NEAR(e.mean, chain.entropy_rate(), 4 * e.se)
      << "empirical " << e.mean << " ± " << e.se << ", exact " << chain.entropy_rate();
  // The log of a uniform choice among 8 would be far outside the error bars.
  EXPECT_GT(std::abs(e.mean - std::log(8.0)), 100 * e.se);
}

TEST(MarkovChain, stationary_matches_empirical_state_frequencies) {
  const int64_t V = 512, n = 2000000;
  const int batches = 100;
  const MarkovChain chain(V, 8, 7);
  std::vector<int32_t> tokens(n);
  chain.sample(hash_name(7, "test.frequencies"), n, tokens.data());
  // Per-state batch means of the indicator x_t == i.
  const int64_t per = n / batches;
  std::vector<std::vector<double>> freq(V, std::vector<double>(batches, 0.0));
  for (int64_t t = 0; t < n; ++t) freq[tokens[t]][t / per] += 1.0 / static_cast<double>(per);
  double worst = 0, spread = 0;
  for (int64_t i = 0; i < V; ++i) {
    double mean = 0, var = 0;
    for (double f : freq[i]) mean += f / batches;
    for (double f : freq[i]) var += (f - mean) * (f - mean) / (batches - 1);
    const double se = std::sqrt(var / batches);
    worst = std::max(worst, std::abs(mean - chain.stationary()[i]) / se);
    spread += std::abs(chain.stationary()[i] - 1.0 / V);
  }
  EXPECT_LT(worst, 5.0) << "largest deviation in standard errors over " << V << " states";
  EXPECT_GT(spread, 0.2);  // pi is far from uniform, so the comparison has teeth
}

TEST(MarkovChain, first_token_is_drawn_from_the_stationary_distribution) {
  const MarkovChain chain(16, 4, 5);
  const int n = 200000;
  std::vector<double> count(16, 0.0);
  int32_t token;
  for (int k = 0; k < n; ++k) {
    chain.sample(hash_name(5, "test.first") + static_cast<uint64_t>(k), 1, &token);
    count[token] += 1;
  }
  for (int i = 0; i < 16; ++i) {  // independent draws: binomial standard errors
    const double p = chain.stationary()[i];
    EXPECT_NEAR(count[i] / n, p, 5 * std::sqrt(p * (1 - p) / n)) << "state " << i;
  }
}

TEST(MarkovChain, rejects_too_few_states_or_successors) {
  using test_util::error_of;
  EXPECT_EQ(error_of([] { MarkovChain(2, 2, 0); }), "synthetic data needs model.vocab >= 3, got 2");
  EXPECT_EQ(error_of([] { MarkovChain(100, 1, 0); }),
            "data.markov_successors = 1 must lie in [2, model.vocab - 1 = 99]");
  EXPECT_EQ(error_of([] { MarkovChain(100, 100, 0); }),
            "data.markov_successors = 100 must lie in [2, model.vocab - 1 = 99]");
  EXPECT_EQ(error_of([] { MarkovChain(100, 99, 0); }), "");  // every other state
}

}  // namespace
}  // namespace trident::data
