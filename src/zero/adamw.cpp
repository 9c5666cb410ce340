// adam_update: AdamW's moments and step on flat tensors.
#include "zero/adamw.h"

#include <ATen/ATen.h>  // Tensor ops

#include <cmath>  // std::pow, std::sqrt

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

}  // namespace trident
