// Who stores what: every element of every tensor is written by exactly one rank: its ZeRO
// range of each parameter (and optimizer state); with ZeRO stage 0 only dp rank 0, a tensor
// several tp ranks hold only on the first of them, the last stage's tied embedding never.
#pragma once
#include <cstdint>  // int64_t
#include <vector>   // std::vector

#include "tensor_parallel/parameter.h"  // Parameter, ParamSpec

namespace trident::checkpoint {

/// Elements [start, start + length) of a parameter's flattened tp shard.
struct OwnedRange {
  int64_t start = 0;
  int64_t length = 0;
};

/// Whether a rank at (tp_rank, dp_rank) stores its owned range of `spec`.
bool stores_param(const ParamSpec& spec, int tp_rank, int dp_rank, int zero_stage);

/// The ranges ZeroOptimizer::param_state reports, computed without an optimizer, for a
/// rank at `dp_rank` of `dp` holding `params` (its stage, its tp shard, construction
/// order): the tied embedding in a flat buffer of its own, the rest in a second one, both
/// cut into buckets of at least `bucket_size` elements (see zero/bucket_layout.h).
std::vector<OwnedRange> zero_owned_ranges(const std::vector<Parameter>& params, int zero_stage,
                                          int dp, int dp_rank, int64_t bucket_size);

}  // namespace trident::checkpoint
