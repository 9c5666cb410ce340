// Causal self-attention's core — scores, mask, softmax, weighted sum of the values — shared
// by the model families, optionally recomputed in backward instead of kept (Megatron's
// selective activation recomputation), and its incremental form over a KV cache.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

#include "models/kv_cache.h"  // LayerKv

namespace trident {

/// softmax(q k^T / sqrt(head_dim) + causal mask) v. q, k, v (B, heads, T, head_dim), the
/// same number of heads each -> (B, heads, T, head_dim). With `recompute`, backward keeps
/// only q, k and v and computes the scores and softmax again: the (B, heads, T, T)
/// tensors, the part of a layer's activations that grows with T^2, are never kept.
at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            bool recompute);

/// Inference over a cache: q (B, heads, n, head_dim) and k, v (B, kv heads, n, head_dim)
/// are the tokens at positions [past, past + n), past = cache.length(). Appends k and v to
/// `cache`, then query i attends to the cached keys 0..past + i, each kv head serving
/// `group` consecutive query heads. With an empty cache it is causal_attention's math.
at::Tensor cached_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            LayerKv& cache, int64_t group = 1);

}  // namespace trident
