// The synthetic source's model: a random first-order Markov chain over the vocabulary,
// made from the seed, with its stationary distribution and exact entropy rate.
#pragma once

#include <cstdint>  // int32_t, int64_t, uint64_t
#include <vector>   // std::vector

namespace trident::data {

/// A fixed random Markov chain on `vocab` states. Each state i has `successors` distinct
/// next states, never i itself: (i+1) mod V, which makes the chain irreducible, and
/// others drawn at random; state 0 also steps to 2, closing a cycle of length V-1 beside
/// the one of length V, which makes it aperiodic. The random edges make it mix fast.
/// Transition weights are log-normal (sigma 2), so the per-state entropy lies well below
/// log(successors). Everything is a pure function of (vocab, successors, seed).
class MarkovChain {
 public:
  /// Builds the chain and its stationary distribution. Throws DataError unless
  /// vocab >= 3 and 2 <= successors <= vocab - 1.
  MarkovChain(int64_t vocab, int64_t successors, uint64_t seed);

  int64_t vocab() const { return vocab_; }
  int64_t successors() const { return successors_; }
  /// The successors() next states of `state`.
  const int32_t* next_states(int64_t state) const { return &next_[state * successors_]; }
  /// Their probabilities (each > 0, summing to 1).
  const double* next_probabilities(int64_t state) const { return &prob_[state * successors_]; }
  /// P(to | from); 0 when `to` is not a successor of `from`.
  double probability(int64_t from, int64_t to) const;

  /// The stationary distribution pi (pi P = pi), by power iteration to L1 change < 1e-14.
  const std::vector<double>& stationary() const { return stationary_; }
  /// Iterations the power method took.
  int64_t power_iterations() const { return iterations_; }
  /// H = sum_i pi_i sum_j -P_ij log P_ij in nats: the least achievable mean loss of
  /// predicting the next token of a sequence started from pi.
  double entropy_rate() const { return entropy_rate_; }

  /// Writes a sequence of `length` states: the first drawn from pi with
  /// uniform_at(key, 0), token t from P(. | token t-1) with uniform_at(key, t).
  void sample(uint64_t key, int64_t length, int32_t* out) const;

 private:
  void build_transitions(uint64_t seed);
  void solve_stationary();

  int64_t vocab_;
  int64_t successors_;
  std::vector<int32_t> next_;  // (V, successors): next states
  std::vector<double> prob_;   // (V, successors): their probabilities
  std::vector<double> cdf_;    // (V, successors): running sums, last forced to 1
  std::vector<double> stationary_;
  std::vector<double> stationary_cdf_;  // (V,): running sums of pi, last forced to 1
  int64_t iterations_ = 0;
  double entropy_rate_ = 0.0;
};

}  // namespace trident::data
