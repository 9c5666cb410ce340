// Who stores what: every element of every tensor is written by exactly one rank: its ZeRO
// range of each parameter (and optimizer state); with ZeRO stage 0 only dp rank 0 (a routed
// expert: expert-dp rank 0 of the ep rank holding it), a tensor several tp ranks hold only
// on the first of them, the last stage's tied embedding never.
#pragma once
#include <cstdint>  // int64_t
#include <vector>   // std::vector

#include "config/config.h"              // ParallelConfig
#include "tensor_parallel/parameter.h"  // Parameter, ParamSpec

namespace trident::checkpoint {

/// Elements [start, start + length) of a parameter's flattened tp shard.
struct OwnedRange {
  int64_t start = 0;
  int64_t length = 0;
};

/// Whether a rank at (tp_rank, dp_rank) stores its owned range of `spec`, experts being
/// shared out over `ep` consecutive dp ranks.
bool stores_param(const ParamSpec& spec, int tp_rank, int dp_rank, int zero_stage, int ep);

/// The ranges ZeroOptimizer::param_state reports, computed without an optimizer, for a
/// rank at `dp_rank` holding `params` (its stage, its tp shard, construction order) in the
/// layout `p` (dp, tp, ep, zero_stage, bucket_size, zero3_persist_below): the parameters
/// assigned to flat buffers as zero/buffer_assignment.h says, each buffer cut into buckets
/// of at least bucket_size elements (see zero/bucket_layout.h), the experts' buffers cut
/// over the expert-dp group (dp / ep ranks), and with `muon` the matrices Muon updates in
/// buffers of their own. Sizes come from the specs, so a stage 3 model whose parameters are
/// released works too.
std::vector<OwnedRange> zero_owned_ranges(const std::vector<Parameter>& params,
                                          const ParallelConfig& p, int dp_rank, bool muon);

/// The keys of `p` that decide which rank stores which slice (dp, cp, pp, tp, ep,
/// zero_stage, bucket_size, zero3_persist_below), every other key at its default: the
/// layout `trident convert` keeps of the run that saved a checkpoint. The rest (schedule,
/// sequence parallelism, offload tiers, ...) is how that run ran, and may not hold in
/// another layout.
ParallelConfig storage_layout(const ParallelConfig& p);

}  // namespace trident::checkpoint
