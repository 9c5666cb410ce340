// AdamW's hyper-parameters and its update of flat tensors: the arithmetic of every ZeRO
// stage's step and of the nvme tier's streamed step (and of calibrate's timing of it), and
// the gradient's sum of squares that clipping scales the step by.
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

/// adam_update of `master` with its gradient multiplied by `grad_scale`: the update
/// ZeroOptimizer runs on a range of its shard, and the one `trident calibrate` times. Host
/// tensors of one dtype (fp32 or fp64), contiguous, take one fused pass whose result per
/// element does not depend on where the range starts; others (a 16-bit gradient, a
/// device) go in chunks of `chunk` elements, each chunk's gradient converted to the
/// moments' dtype. The tensors are flat; exp_avg, exp_avg_sq and grad hold at least
/// master's elements.
void adam_update_chunks(at::Tensor master, const at::Tensor& grad, at::Tensor exp_avg,
                        at::Tensor exp_avg_sq, double lr, int64_t step, double grad_scale,
                        const AdamWOptions& o, int64_t chunk);

/// Σ x² in float64 of a flat, contiguous fp32 host tensor, summed over fixed blocks of
/// kSquaresBlock elements in order, whatever the number of threads.
constexpr int64_t kSquaresBlock = int64_t{1} << 16;
double sum_of_squares(const at::Tensor& x);

}  // namespace trident
