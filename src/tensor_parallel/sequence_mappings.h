// The autograd mappings of sequence parallelism (Korthikanti et al. 2022): between tp
// regions each tp rank holds a slice of the sequence (dimension 1 of (B, T, ...)), and the
// all-reduces of plain tensor parallelism become an all-gather and a reduce-scatter.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

namespace trident {
class Communicator;

/// Forward: all-gather the sequence, (B, T/tp, ...) -> (B, T, ...), the input of a layer
/// every tp rank computes a part of. Backward: reduce-scatter, since each rank's gradient
/// of the whole sequence is its part's contribution only.
at::Tensor gather_from_sequence_region(const at::Tensor& x, Communicator& tp);

/// Forward: sum the partial outputs of a row-parallel layer over tp and keep this rank's
/// slice of the sequence, (B, T, ...) -> (B, T/tp, ...). Backward: all-gather.
at::Tensor reduce_scatter_to_sequence_region(const at::Tensor& x, Communicator& tp);

/// For a layer every tp rank computes whole on the whole sequence (an MoE layer: its router
/// and experts see every token, as without sequence parallelism). Forward: all-gather the
/// sequence, (B, T/tp, ...) -> (B, T, ...). Backward: this rank's slice of the gradient,
/// which is the whole gradient on every rank (the layer's own tp layers sum their parts).
at::Tensor gather_from_sequence_region_whole_grad(const at::Tensor& x, Communicator& tp);

/// Its way back: forward, this rank's slice of a sequence every rank holds whole, (B, T,
/// ...) -> (B, T/tp, ...); backward, all-gather the slices' gradients.
at::Tensor split_to_sequence_region(const at::Tensor& x, Communicator& tp);

/// For a parameter replicated over tp but applied to this rank's slice of the sequence
/// (norm weights, row-parallel biases, GPT's position embedding). Forward: identity.
/// Backward: all-reduce the gradient over tp, so that every copy gets the gradient of the
/// whole sequence and the copies stay equal (Megatron all-reduces these once per step).
at::Tensor sum_grad_over_sequence(const at::Tensor& w, Communicator& tp);

/// The sequence helpers the mappings use, for layers that gather in their own backward.
/// (B, n, ...) on every rank -> (B, n * tp, ...), rank r's slice at [r*n, (r+1)*n).
at::Tensor all_gather_sequence(const at::Tensor& x, Communicator& tp);
/// (B, T, ...) partial on every rank -> (B, T/tp, ...), this rank's slice of the sum.
at::Tensor reduce_scatter_sequence(const at::Tensor& x, Communicator& tp);

}  // namespace trident
