// What a layer keeps for backward, measured by the counting allocator
// (common/memory_tracker.h, installed by the caller).
#pragma once
#include <ATen/ATen.h>

#include <cstdint>

#include "common/memory_tracker.h"  // live_tensor_bytes, peak_tensor_bytes

namespace trident::testing {

/// What the forward of `block` over a (batch, rows, hidden) input leaves allocated (`kept`,
/// its output included: what the block keeps for backward with its input counted in place
/// of its output (same size), as Korthikanti count a layer's input as the layer's), and the
/// most bytes allocated at any moment of the forward and the backward that follows
/// (`peak`), both beyond what was allocated before. Without `record` the forward records
/// no graph (full recomputation keeps only the input).
struct BlockMemory {
  int64_t kept = 0, peak = 0;
};
template <class Block>
BlockMemory block_memory(Block& block, int64_t batch, int64_t rows, int64_t hidden,
                         bool record = true) {
  const at::Tensor x = at::randn({batch, rows, hidden}).requires_grad_(true);
  const int64_t before = live_tensor_bytes();
  reset_peak_tensor_bytes();
  at::Tensor y;
  if (record) {
    y = block.forward(x);
  } else {
    at::NoGradGuard no_grad;
    y = block.forward(x);
  }
  BlockMemory m;
  m.kept = live_tensor_bytes() - before;
  if (y.requires_grad()) y.sum().backward();
  m.peak = peak_tensor_bytes() - before;
  return m;
}

/// block_memory's `kept`.
template <class Block>
int64_t kept_bytes(Block& block, int64_t batch, int64_t rows, int64_t hidden, bool record = true) {
  return block_memory(block, batch, rows, hidden, record).kept;
}

}  // namespace trident::testing
