// Choosing the next token from a model's logits: greedy, or a draw at a temperature from
// the top k and the top-p nucleus. The draw for position i is a pure function of (seed, i)
// (counter-based), so a generation repeats in any layout and from any prefix.
#pragma once
#include <cstdint>
#include <vector>

namespace trident {

struct SamplingOptions {
  double temperature = 0.0;  ///< 0: greedy (the highest logit, the lowest id on a tie)
  int64_t top_k = 0;         ///< keep the k most likely tokens; 0 keeps all
  double top_p = 1.0;        ///< keep the fewest most likely tokens whose probability >= p
  uint64_t seed = 0;
};

/// The token at `position` of the sequence, drawn from `logits` (one per vocabulary id).
/// Candidates are ordered by logit, highest first, ties by lower id; top_k, then top_p,
/// cut that order; the kept ones get softmax(logit / temperature), and the uniform draw
/// u = uniform_at(seed, position) picks the first whose cumulative probability exceeds u.
int64_t sample_token(const std::vector<double>& logits, const SamplingOptions& options,
                     int64_t position);

}  // namespace trident
