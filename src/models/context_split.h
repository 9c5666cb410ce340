// Context parallelism's cut of a sequence: 2 * cp equal chunks, context-parallel rank i
// holding chunks i and 2cp-1-i (in that order), so that every rank's queries see as many
// earlier keys under the causal mask and the ring's work is even (Megatron-Core's
// load balancing).
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor
#include <c10/core/Device.h>   // at::Device

#include <cstdint>

namespace trident {
class Communicator;

/// The ranks splitting each sequence: `cp`'s size, 1 for none (null).
int context_size(const Communicator* cp);
/// This rank's place among them: `cp`'s rank, 0 for none.
int context_rank(const Communicator* cp);

/// The global positions of the seq_len / cp tokens that rank `rank` of `cp` holds, in the
/// order it holds them (int64). cp = 1: 0 .. seq_len-1.
at::Tensor context_positions(int64_t seq_len, int rank, int cp, at::Device device = at::kCPU);

/// Rank `rank`'s tokens of `x`, whose dimension `dim` is the whole sequence.
at::Tensor take_context_slice(const at::Tensor& x, int64_t dim, int rank, int cp);

}  // namespace trident
