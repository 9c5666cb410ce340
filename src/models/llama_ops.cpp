// RMSNorm and RoPE.
#include "models/llama_ops.h"

#include <ATen/ATen.h>

namespace trident {

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const bool low_precision = x.scalar_type() == at::kBFloat16 || x.scalar_type() == at::kHalf;
  const at::Tensor h = low_precision ? x.to(at::kFloat) : x;
  const at::Tensor normed = h * at::rsqrt(h.pow(2).mean({-1}, /*keepdim=*/true) + eps);
  return weight * normed.to(x.scalar_type());
}

RopeTables rope_tables(int64_t positions, int64_t head_dim, double theta, at::ScalarType dtype,
                       at::Device device) {
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  // inv_freq[i] = theta^(-2i/d), i in [0, d/2)
  const at::Tensor inv_freq =
      at::pow(theta, at::arange(0, head_dim, 2, f64) / static_cast<double>(head_dim)).reciprocal();
  const at::Tensor angles = at::outer(at::arange(positions, f64), inv_freq);  // (P, d/2)
  const at::Tensor emb = at::cat({angles, angles}, -1);                       // (P, d)
  return {emb.cos().to(device, dtype), emb.sin().to(device, dtype)};
}

at::Tensor apply_rope(const at::Tensor& x, const RopeTables& tables) {
  const int64_t T = x.size(2), half = x.size(3) / 2;
  const at::Tensor cos = tables.cos.narrow(0, 0, T), sin = tables.sin.narrow(0, 0, T);  // (T, d)
  const at::Tensor rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos + rotated * sin;
}

}  // namespace trident
