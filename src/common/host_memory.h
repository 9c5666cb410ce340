// Large blocks of host memory, from the heap or each mapped on its own.
//
// trident's heap keeps what is freed (cli/main.cpp: no trimming, no mmap), which is fastest
// when the same tensors come and go every step, but the heap's fragmentation then stays in
// the resident set. A rank that trades speed for memory (train.allocator) maps every block
// of kMappedBlockBytes or more on its own, advises transparent huge pages for it (so that
// touching it again costs one fault per 2 MiB, not per 4 KiB) and unmaps it when freed.
#pragma once
#include <cstddef>  // size_t

namespace trident {

/// Blocks of this many bytes or more are mapped on their own while large blocks are
/// released.
constexpr size_t kMappedBlockBytes = size_t{1} << 20;

/// Whether blocks of kMappedBlockBytes or more are mapped and returned to the system when
/// freed. Process-wide, as libtorch's CPU allocator is: set at start-up from
/// train.allocator; each block remembers how it was made, so a change affects only later
/// blocks.
void set_release_large_blocks(bool release);
bool releases_large_blocks();

/// A block of host memory aligned to 4096 bytes (kIoAlignment) at least.
struct HostBlock {
  void* data = nullptr;
  size_t bytes = 0;     ///< what was asked for
  bool mapped = false;  ///< a mapping of its own, not heap memory
};

/// `bytes` bytes (uninitialised), mapped on their own when large blocks are released and
/// bytes >= kMappedBlockBytes, else from the heap. Throws std::bad_alloc.
HostBlock allocate_host_block(size_t bytes);
/// Returns `block` where it came from (nothing for an empty one).
void free_host_block(const HostBlock& block);

/// For owners that keep a block behind an opaque pointer (libtorch's DataPtr context): a
/// block on the free store, and its deleter, which frees the memory and the HostBlock.
HostBlock* new_host_block(size_t bytes);
void delete_host_block(void* block);

}  // namespace trident
