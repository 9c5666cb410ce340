// adam_update: AdamW's moments and step on flat tensors, whole or in chunks.
#include "zero/adamw.h"

#include <ATen/ATen.h>  // Tensor ops

#include <algorithm>  // std::min
#include <cmath>      // std::pow, std::sqrt

namespace trident {

void adam_update(at::Tensor& master, const at::Tensor& grad, at::Tensor& exp_avg,
                 at::Tensor& exp_avg_sq, double lr, int64_t step, const AdamWOptions& o) {
  exp_avg.mul_(o.beta1).add_(grad, 1.0 - o.beta1);
  exp_avg_sq.mul_(o.beta2).addcmul_(grad, grad, 1.0 - o.beta2);
  const double bias1 = 1.0 - std::pow(o.beta1, static_cast<double>(step));
  const double bias2 = 1.0 - std::pow(o.beta2, static_cast<double>(step));
  at::Tensor denom = (exp_avg_sq.sqrt() / std::sqrt(bias2)).add_(o.eps);
  master.addcdiv_(exp_avg, denom, -lr / bias1);
}

void adam_update_chunks(at::Tensor master, const at::Tensor& grad, at::Tensor exp_avg,
                        at::Tensor exp_avg_sq, double lr, int64_t step, double grad_scale,
                        const AdamWOptions& o, int64_t chunk) {
  for (int64_t i = 0; i < master.numel(); i += chunk) {
    const int64_t c = std::min(chunk, master.numel() - i);
    at::Tensor m = master.narrow(0, i, c), m1 = exp_avg.narrow(0, i, c),
               m2 = exp_avg_sq.narrow(0, i, c);
    const at::Tensor scaled = grad.narrow(0, i, c).to(exp_avg.scalar_type()) * grad_scale;
    adam_update(m, scaled, m1, m2, lr, step, o);
  }
}

}  // namespace trident
