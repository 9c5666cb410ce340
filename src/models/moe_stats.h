// What an MoE layer routed during a step, kept apart from the layer so that the stage
// interface (model_stage.h) needs no libtorch module headers for it.
#pragma once
#include <cstdint>
#include <vector>

namespace trident {

/// What an MoE layer routed during a step on this rank (forward passes that record a graph:
/// a recomputation counts once, evaluation not at all): its auxiliary losses' share of the
/// objective, the (token, expert) choices each expert received, and those dropped at capacity.
struct MoeLayerStats {
  double aux_loss = 0.0;
  int64_t dropped = 0;
  std::vector<int64_t> load;  // per expert
};

}  // namespace trident
