// A host buffer aligned for O_DIRECT transfers (4096 bytes, a multiple of every logical
// block size in use), owned and freed like a unique_ptr; from the heap, or mapped on its
// own while large blocks are released (common/host_memory.h).
#pragma once
#include <cstddef>  // size_t
#include <utility>  // std::swap

#include "common/host_memory.h"  // HostBlock, allocate_host_block

namespace trident {

/// Alignment of buffers, file offsets and transfer lengths of the nvme tier.
constexpr size_t kIoAlignment = 4096;

/// `n` rounded up to a multiple of kIoAlignment.
constexpr size_t align_up(size_t n) { return (n + kIoAlignment - 1) / kIoAlignment * kIoAlignment; }

/// `bytes` (rounded up to kIoAlignment) of uninitialised memory at a kIoAlignment boundary.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) : block_(allocate_host_block(align_up(bytes))) {}
  ~AlignedBuffer() { free_host_block(block_); }
  AlignedBuffer(AlignedBuffer&& o) noexcept : block_(o.block_) { o.block_ = HostBlock{}; }
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    std::swap(block_, o.block_);
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  char* data() const { return static_cast<char*>(block_.data); }
  size_t size() const { return block_.bytes; }

 private:
  HostBlock block_;
};

}  // namespace trident
