// The synthetic Markov chain: random successors and weights from the counter RNG,
// stationary distribution by power iteration, entropy rate, and sampling.
#include "data/markov_chain.h"

#include <algorithm>  // std::upper_bound, std::min, std::fill
#include <cmath>      // std::exp, std::log, std::abs
#include <string>     // std::to_string

#include "common/counter_rng.h"  // hash_name, random_u64, normal_at, uniform_at
#include "data/data_error.h"     // DataError

namespace trident::data {
namespace {

constexpr double kWeightSigma = 2.0;  // log-normal spread of the transition weights
constexpr double kTolerance = 1e-14;  // L1 change of pi that ends the power iteration
constexpr int64_t kMaxIterations = 100000;

/// Index of the bin of u in a running-sum table whose last entry is 1.
int64_t bin_of(const double* cdf, int64_t n, double u) {
  const int64_t k = std::upper_bound(cdf, cdf + n, u) - cdf;
  return std::min(k, n - 1);
}

}  // namespace

MarkovChain::MarkovChain(int64_t vocab, int64_t successors, uint64_t seed)
    : vocab_(vocab), successors_(successors) {
  if (vocab < 3) {
    throw DataError("synthetic data needs model.vocab >= 3, got " + std::to_string(vocab));
  }
  if (successors < 2 || successors > vocab - 1) {
    throw DataError("data.markov_successors = " + std::to_string(successors) +
                    " must lie in [2, model.vocab - 1 = " + std::to_string(vocab - 1) + "]");
  }
  build_transitions(seed);
  solve_stationary();
}

void MarkovChain::build_transitions(uint64_t seed) {
  const int64_t V = vocab_, m = successors_;
  next_.resize(V * m);
  prob_.resize(V * m);
  cdf_.resize(V * m);
  const uint64_t pick_key = hash_name(seed, "data.markov.successors");
  const uint64_t weight_key = hash_name(seed, "data.markov.weights");
  std::vector<int64_t> taken_by(V, -1);  // taken_by[s] == i: s is already a successor of i
  for (int64_t i = 0; i < V; ++i) {
    int32_t* next = &next_[i * m];
    taken_by[i] = i;  // no self-loop
    // (i+1) mod V closes the cycle 0 -> 1 -> ... -> V-1 -> 0 (irreducible); state 0 also
    // steps to 2, closing a cycle of length V-1 (coprime lengths: aperiodic).
    next[0] = static_cast<int32_t>((i + 1) % V);
    taken_by[next[0]] = i;
    int64_t filled = 1;
    if (i == 0) {
      next[filled++] = 2;
      taken_by[2] = i;
    }
    for (uint64_t draw = 0; filled < m; ++filled) {  // rejection sampling of distinct others
      int64_t s;
      do {
        s = static_cast<int64_t>(random_u64(pick_key, static_cast<uint64_t>(i), draw++) %
                                 static_cast<uint64_t>(V));
      } while (taken_by[s] == i);
      taken_by[s] = i;
      next[filled] = static_cast<int32_t>(s);
    }
    const uint64_t state_key = random_u64(weight_key, static_cast<uint64_t>(i));
    double* p = &prob_[i * m];
    double total = 0.0;
    for (int64_t j = 0; j < m; ++j) {
      p[j] = std::exp(kWeightSigma * normal_at(state_key, static_cast<uint64_t>(j)));
      total += p[j];
    }
    double running = 0.0;
    for (int64_t j = 0; j < m; ++j) {
      p[j] /= total;
      running += p[j];
      cdf_[i * m + j] = running;
    }
    cdf_[i * m + m - 1] = 1.0;
  }
}

void MarkovChain::solve_stationary() {
  const int64_t V = vocab_, m = successors_;
  std::vector<double> pi(V, 1.0 / static_cast<double>(V)), next_pi(V);
  double change = 1.0;
  for (iterations_ = 0; change >= kTolerance; ++iterations_) {
    if (iterations_ == kMaxIterations) {
      throw DataError(
          "synthetic data: the Markov chain's stationary distribution did not "
          "converge; choose another data.seed or data.markov_successors");
    }
    std::fill(next_pi.begin(), next_pi.end(), 0.0);
    for (int64_t i = 0; i < V; ++i) {  // next_pi = pi P
      for (int64_t j = 0; j < m; ++j) next_pi[next_[i * m + j]] += pi[i] * prob_[i * m + j];
    }
    double total = 0.0;
    for (double x : next_pi) total += x;
    change = 0.0;
    for (int64_t i = 0; i < V; ++i) {
      next_pi[i] /= total;  // keep the sum at 1 against rounding drift
      change += std::abs(next_pi[i] - pi[i]);
    }
    pi.swap(next_pi);
  }
  stationary_ = pi;
  stationary_cdf_.resize(V);
  double running = 0.0;
  entropy_rate_ = 0.0;
  for (int64_t i = 0; i < V; ++i) {
    running += pi[i];
    stationary_cdf_[i] = running;
    double h = 0.0;
    for (int64_t j = 0; j < m; ++j) h -= prob_[i * m + j] * std::log(prob_[i * m + j]);
    entropy_rate_ += pi[i] * h;
  }
  stationary_cdf_[V - 1] = 1.0;
}

double MarkovChain::probability(int64_t from, int64_t to) const {
  for (int64_t j = 0; j < successors_; ++j) {
    if (next_[from * successors_ + j] == to) return prob_[from * successors_ + j];
  }
  return 0.0;
}

void MarkovChain::sample(uint64_t key, int64_t length, int32_t* out) const {
  if (length <= 0) return;
  int64_t state = bin_of(stationary_cdf_.data(), vocab_, uniform_at(key, 0));
  out[0] = static_cast<int32_t>(state);
  for (int64_t t = 1; t < length; ++t) {
    const int64_t j =
        bin_of(&cdf_[state * successors_], successors_, uniform_at(key, static_cast<uint64_t>(t)));
    state = next_[state * successors_ + j];
    out[t] = static_cast<int32_t>(state);
  }
}

}  // namespace trident::data
