// Which flat buffer each parameter goes to: the optimizer and the checkpoint's ownership
// arithmetic both ask here, so that they always agree on a rank's ranges.
#pragma once
#include <cstddef>  // size_t
#include <cstdint>  // int64_t
#include <vector>

#include "tensor_parallel/parameter.h"  // Parameter, ParamSpec

namespace trident {

/// The flat buffers of a rank, by index. The experts' buffers are sharded over the
/// expert-dp group (ParallelContext::expert_dp), the others over dp. With Muon
/// (optimizer.name = "muon") the matrices it updates go to buffers of their own, one per
/// kind above, which keep one state (the momentum) instead of AdamW's two: buffer
/// kMuonBuffers + b holds the Muon matrices that would be in buffer b.
enum ZeroBuffer : size_t {
  kEmbeddingBuffer = 0,         ///< the tied token embedding alone (same partition on both stages)
  kShardedBuffer = 1,           ///< everything else (in stage 3: gathered per layer)
  kPersistentBuffer = 2,        ///< stage 3: parameters below persist_below, kept whole
  kExpertBuffer = 3,            ///< the routed experts' parameters (ParamSpec::expert)
  kExpertPersistentBuffer = 4,  ///< stage 3: experts' parameters below persist_below
  kMuonBuffers = 5,             ///< the first Muon buffer (kMuonBuffers + kShardedBuffer, ...)
  kNumZeroBuffers = 10,
};

/// Whether a buffer holds the matrices Muon updates.
inline bool is_muon_buffer(size_t buffer) { return buffer >= kMuonBuffers; }
/// The kind of a buffer, Muon's or not.
inline size_t base_buffer(size_t buffer) { return buffer % kMuonBuffers; }
/// Whether a buffer holds routed experts' parameters: cut over the expert-dp group.
inline bool is_expert_buffer(size_t buffer) {
  return base_buffer(buffer) == kExpertBuffer || base_buffer(buffer) == kExpertPersistentBuffer;
}
/// Whether stage 3 keeps a buffer whole on every rank (as stage 2 does).
inline bool is_persistent_buffer(size_t buffer) {
  return base_buffer(buffer) == kPersistentBuffer || base_buffer(buffer) == kExpertPersistentBuffer;
}

/// The buffer of a parameter of `numel` elements (its tp shard) under `stage`; `muon`: the
/// run's optimizer is Muon (zero/muon.h decides which parameters it updates).
size_t buffer_of(const ParamSpec& spec, int64_t numel, int stage, int64_t persist_below,
                 bool muon = false);

/// Each buffer's parameters, as indices into `params`, in construction order; `numels[i]`
/// is parameter i's element count (its tp shard's).
std::vector<std::vector<size_t>> assign_buffers(const std::vector<Parameter>& params,
                                                const std::vector<int64_t>& numels, int stage,
                                                int64_t persist_below, bool muon = false);

}  // namespace trident
