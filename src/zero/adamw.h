// AdamW's hyper-parameters and its update of flat tensors: the arithmetic of every ZeRO
// stage's step and of the nvme tier's streamed step (and of calibrate's timing of it).
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

#include <cstdint>  // int64_t

namespace trident {

/// AdamW's hyper-parameters; the learning rate comes with each step.
struct AdamWOptions {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
};

/// AdamW (Loshchilov & Hutter), as torch.optim.AdamW computes it, on flat tensors:
/// moments updated with `grad`, then `master` moved by the bias-corrected step of number
/// `step`. The decoupled weight decay is applied by the caller (it depends on the
/// parameter).
void adam_update(at::Tensor& master, const at::Tensor& grad, at::Tensor& exp_avg,
                 at::Tensor& exp_avg_sq, double lr, int64_t step, const AdamWOptions& o);

/// adam_update over `master` in chunks of `chunk` elements, from its start, each chunk's
/// gradient converted to the moments' dtype and multiplied by `grad_scale`: the update
/// ZeroOptimizer runs on a range of its shard (the temporaries stay in cache), and the one
/// `trident calibrate` times. The tensors are flat; exp_avg, exp_avg_sq and grad hold at
/// least master's elements.
void adam_update_chunks(at::Tensor master, const at::Tensor& grad, at::Tensor exp_avg,
                        at::Tensor exp_avg_sq, double lr, int64_t step, double grad_scale,
                        const AdamWOptions& o, int64_t chunk);

}  // namespace trident
