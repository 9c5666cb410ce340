// The keys and values an inference run has computed so far, per block, so that each new
// token attends to them instead of recomputing the whole sequence (incremental decoding).
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

#include <cstdint>
#include <vector>

namespace trident {

/// One block's cache: (B, this rank's kv heads, tokens so far, head_dim) each, undefined
/// before the first token.
struct LayerKv {
  at::Tensor keys, values;
  int64_t length() const { return keys.defined() ? keys.size(2) : 0; }
};

/// A whole model's cache: one LayerKv per block, in forward order, and the positions seen.
struct KvCache {
  std::vector<LayerKv> layers;
  int64_t length = 0;  ///< the next token's position
};

}  // namespace trident
