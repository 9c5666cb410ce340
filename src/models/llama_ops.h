// The pieces of Llama's math that are not linear layers, as Hugging Face's
// LlamaForCausalLM computes them: RMSNorm and rotary position embeddings (RoPE).
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

#include <cstdint>

namespace trident {

/// x * rsqrt(mean(x^2) + eps) * weight over the last dimension. 16-bit inputs are
/// normalised in float32 and cast back before the weight, as Hugging Face does.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

/// cos and sin of RoPE's angles, both (positions, head_dim): angle (t, i) = t * inv_freq[i
/// mod head_dim/2] with inv_freq[i] = theta^(-2i/head_dim), the two halves repeated
/// (Hugging Face's layout). Computed in float64, returned in `dtype`.
struct RopeTables {
  at::Tensor cos, sin;
};
RopeTables rope_tables(int64_t positions, int64_t head_dim, double theta, at::ScalarType dtype,
                       at::Device device = at::kCPU);

/// x * cos + rotate_half(x) * sin, rotate_half(x) = cat(-x2, x1) of x's two halves (the
/// half-split order of Hugging Face's q/k rows, not Meta's interleaved pairs).
/// x (B, heads, T, head_dim); the tables' first T rows are used.
at::Tensor apply_rope(const at::Tensor& x, const RopeTables& tables);

}  // namespace trident
