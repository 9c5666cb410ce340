// The conjugate autograd mappings between the tensor-parallel region and the replicated
// one, named for what they do to the tensor (Megatron's names). Each forward collective
// has its adjoint in backward; with a tp group of one they are identities.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

namespace trident {
class Communicator;

/// Forward: identity. Backward: all-reduce the gradient over tp (the input feeds every
/// rank's shard of a column-parallel layer, so its gradient is the sum of their parts).
at::Tensor copy_to_tp_region(const at::Tensor& x, Communicator& tp);

/// Forward: all-reduce (sum) over tp, the partial outputs of a row-parallel layer.
/// Backward: identity.
at::Tensor reduce_from_tp_region(const at::Tensor& x, Communicator& tp);

/// For a weight that groups of `replicas` consecutive tp ranks hold as identical copies
/// (Llama's kv heads when tp > kv_heads). Forward: identity. Backward: sum the gradient
/// over the ranks of this rank's group, so every copy gets the whole gradient and stays
/// equal after the update. Identity when `replicas` is 1.
at::Tensor reduce_grad_over_replicas(const at::Tensor& w, Communicator& tp, int replicas);

}  // namespace trident
