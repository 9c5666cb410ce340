// The column-parallel linear layer of sequence parallelism: its input arrives as this
// rank's slice of the sequence, is all-gathered for the product, and only the slice is
// kept for backward, which gathers it again (Korthikanti et al. 2022, section 4.2.2).
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

namespace trident {
class Communicator;

/// y = gather(x) W^T + b. x (B, T/tp, in) this rank's slice of the sequence;
/// weight (out/tp, in); bias (out/tp) or undefined -> y (B, T, out/tp). Backward: the
/// input's gradient is reduce-scattered back to the slices; the weight's and bias's are
/// this rank's shard's over the whole sequence.
at::Tensor sequence_gathered_linear(const at::Tensor& x, const at::Tensor& weight,
                                    const at::Tensor& bias, Communicator& tp);

}  // namespace trident
