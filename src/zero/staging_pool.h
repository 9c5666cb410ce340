// Aligned host memory for transfers between the nvme tier and tensors, reused by size.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor, at::ScalarType

#include <cstddef>  // size_t
#include <cstdint>  // int64_t
#include <map>      // std::map
#include <memory>   // std::enable_shared_from_this
#include <vector>

#include "common/aligned_buffer.h"  // AlignedBuffer

namespace trident {

/// Tensors over kIoAlignment-aligned memory whose room is rounded up to whole blocks, so
/// that the tier reads or writes a piece straight into or out of them (O_DIRECT). A
/// tensor's memory returns to the pool when its last reference goes and is handed out
/// again for the next tensor of that room: trident's heap is never trimmed and never
/// mmaps, so a fresh buffer per transfer would leave holes that activations split.
class StagingPool : public std::enable_shared_from_this<StagingPool> {
 public:
  /// Create with std::make_shared: the tensors' memory refers back to the pool.
  /// A (numel) tensor of `dtype`, uninitialised, at an aligned address with room for
  /// align_up(numel x element size) bytes.
  at::Tensor take(int64_t numel, at::ScalarType dtype);
  /// Bytes the pool owns: handed out and kept for reuse.
  int64_t bytes() const { return bytes_; }

 private:
  struct Loan;
  static void give_back(void* loan);
  std::map<size_t, std::vector<AlignedBuffer>> free_;  // by room in bytes
  int64_t bytes_ = 0;
};

}  // namespace trident
