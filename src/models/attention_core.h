// Causal self-attention's core — scores, mask, softmax, weighted sum of the values — shared
// by the model families, optionally recomputed in backward instead of kept (Megatron's
// selective activation recomputation).
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

namespace trident {

/// softmax(q k^T / sqrt(head_dim) + causal mask) v. q, k, v (B, heads, T, head_dim), the
/// same number of heads each -> (B, heads, T, head_dim). With `recompute`, backward keeps
/// only q, k and v and computes the scores and softmax again: the (B, heads, T, T)
/// tensors, the part of a layer's activations that grows with T^2, are never kept.
at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            bool recompute);

}  // namespace trident
