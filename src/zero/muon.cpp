// Muon's per-matrix arithmetic: the Newton-Schulz iteration and the update's scale.
#include "zero/muon.h"

#include <ATen/ATen.h>  // Tensor ops

#include <algorithm>  // std::max
#include <cmath>      // std::sqrt

namespace trident {

bool is_muon_matrix(const ParamSpec& spec) {
  const std::string& n = spec.name;
  const std::string router = "router.weight";
  const bool in_block = n.rfind("h.", 0) == 0;
  const bool is_router =
      n.size() >= router.size() && n.compare(n.size() - router.size(), router.size(), router) == 0;
  return spec.global_shape.size() == 2 && in_block && !is_router;
}

std::vector<at::Tensor> logical_matrices(const ParamSpec& spec, const at::Tensor& global) {
  if (spec.shard.fused_chunks <= 1) return {global};
  return global.chunk(spec.shard.fused_chunks, spec.shard.dim);
}

at::Tensor newton_schulz(const at::Tensor& g, int steps) {
  // Keller Jordan's coefficients: the quintic's slope at 0 is large, so small singular
  // values grow fast, and its fixed points lie about 0.7 to 1.2.
  constexpr double a = 3.4445, b = -4.7750, c = 2.0315;
  const bool tall = g.size(0) > g.size(1);
  at::Tensor x = tall ? g.t() : g;
  x = x / (x.norm() + 1e-7);
  for (int k = 0; k < steps; ++k) {
    const at::Tensor A = x.mm(x.t());
    const at::Tensor B = b * A + c * A.mm(A);
    x = a * x + B.mm(x);
  }
  return (tall ? x.t() : x).contiguous();
}

double muon_scale(int64_t rows, int64_t cols, bool spectral) {
  const double r = static_cast<double>(rows), c = static_cast<double>(cols);
  return spectral ? std::sqrt(std::max(1.0, r / c)) : 0.2 * std::sqrt(std::max(r, c));
}

}  // namespace trident
