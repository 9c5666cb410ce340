// Greedy and top-k / top-p sampling on a counter-based draw.
#include "train/sampling.h"

#include <algorithm>  // std::stable_sort
#include <cmath>      // std::exp
#include <numeric>    // std::iota
#include <stdexcept>  // std::invalid_argument

#include "common/counter_rng.h"  // uniform_at

namespace trident {

int64_t sample_token(const std::vector<double>& logits, const SamplingOptions& o,
                     int64_t position) {
  if (logits.empty()) throw std::invalid_argument("sample_token: no logits");
  std::vector<int64_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&logits](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  if (o.temperature <= 0.0) return order[0];
  size_t kept = order.size();
  if (o.top_k > 0) kept = std::min(kept, static_cast<size_t>(o.top_k));
  // Softmax over the kept candidates, the largest logit first (it is the maximum).
  std::vector<double> weight(kept);
  double total = 0.0;
  for (size_t i = 0; i < kept; ++i) {
    weight[i] = std::exp((logits[order[i]] - logits[order[0]]) / o.temperature);
    total += weight[i];
  }
  if (o.top_p < 1.0) {
    double mass = 0.0;
    size_t nucleus = 0;
    while (nucleus < kept && mass < o.top_p * total) mass += weight[nucleus++];
    kept = std::max<size_t>(nucleus, 1);
    total = mass > 0.0 ? mass : weight[0];
  }
  const double u = uniform_at(o.seed, static_cast<uint64_t>(position)) * total;
  double cumulative = 0.0;
  for (size_t i = 0; i < kept; ++i) {
    cumulative += weight[i];
    if (u < cumulative) return order[i];
  }
  return order[kept - 1];  // u within rounding of the total
}

}  // namespace trident
