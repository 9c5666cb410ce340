// Text generation with a model held whole by each tp group (pp = 1): the prompt once, then
// one token at a time over a KV cache (or, for comparison, the whole sequence again at
// every token), each token chosen from the full vocabulary's logits gathered over tp.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

#include <cstdint>
#include <vector>

#include "models/model_stage.h"  // ModelStage
#include "train/sampling.h"      // SamplingOptions

namespace trident {
class Communicator;

struct GenerateOptions {
  int64_t tokens = 16;  ///< new tokens to generate
  SamplingOptions sampling;
  bool kv_cache = true;  ///< false: recompute the whole sequence for every token
  bool keep_logits = false;
};

struct Generation {
  std::vector<int64_t> tokens;  ///< the new tokens, after the prompt
  /// With keep_logits: the logits each new token was chosen from, (vocab) in float64.
  std::vector<at::Tensor> logits;
};

/// Continues `prompt` (token ids, at least one) by options.tokens tokens. The token at
/// position i of the sequence is sample_token of the logits after position i - 1. Every
/// rank of the tp group (and every group) computes the same tokens; collective over `tp`.
/// Throws when the prompt and the new tokens exceed the model's positions.
Generation generate(ModelStage& model, Communicator& tp, const std::vector<int64_t>& prompt,
                    const GenerateOptions& options);

}  // namespace trident
