// Large blocks of host memory: mapped on their own, and when freed either kept for reuse
// or given back to the system.
//
// Small blocks come from the heap, which keeps what is freed (cli/main.cpp: no trimming, no
// mmap; release_host_memory() trims it between two workloads of one process). Large ones
// (kMappedBlockBytes or more) never do: in glibc's heap, tensors of many sizes with
// interleaved lifetimes leave holes that a later request does not fit, and the heap then grew
// to 2.5-4x the live bytes of a long sequence's attention scores (measured,
// docs/performance.md). Each large block is a mapping of its own, and when freed it is kept:
// the next request of about its size takes it, with no faults, as PyTorch's caching
// allocators do. Kept blocks are unmapped (the largest first) where a new mapping would take
// the mapped bytes past a bound: twice the most bytes ever in use at once (the default), or
// the most ever in use (train.allocator = "release": the resident set's bound when every
// freed block was unmapped, which faulted each reused block in again). Released, a kept
// block serves any request it holds, its pages past the request given back: the optimizer's
// and the forward's blocks, of unrelated sizes, take turns in the same mappings. A Llama of
// hidden 640 with its optimizer states in the tier took 2.25-2.30 s a step when every freed
// block was unmapped, 1.27-1.30 s with blocks kept of their own size only, 0.93-1.03 s now
// (peak RSS 625, 627 and 655-661 MB).
#pragma once
#include <cstddef>  // size_t

namespace trident {

/// Blocks of this many bytes or more are mapped on their own. Medium tensors belong here
/// too: in the heap, which is never trimmed, a Llama of hidden 640's activations of
/// 640 KiB (s b h at micro-batches of 4, fp32) left 174 MB spanned for 49 MB in use after a
/// step, which train.allocator = "release" could not give back; with blocks of 64 KiB and
/// more mapped the heap spans 50 MB, and the peak RSS of ZeRO 3 with the optimizer's states
/// and gradients in the tier fell from 633-639 MB to 555-569 MB (docs/performance.md).
constexpr size_t kMappedBlockBytes = size_t{64} << 10;

/// Whether blocks of kMappedBlockBytes or more stay within the most ever in use (else
/// twice that). Process-wide, as libtorch's CPU allocator is: set at start-up from
/// train.allocator; a change applies to blocks freed after it.
void set_release_large_blocks(bool release);
bool releases_large_blocks();

/// Kept blocks are bounded: the large blocks mapped, in use and kept together, stay within
/// (1 + kKeptLargeBlockSlack) times the most bytes of large blocks ever in use at once. A
/// request that no kept block serves unmaps kept ones (the largest first) to stay within it.
/// A step's sizes need more than its peak in use kept (each size's own peak): a bound of
/// 1.25 unmapped and faulted in 15 blocks a step again on a Llama of hidden 384 at dp 2,
/// ZeRO 1 (1.45 s a step against 0.92 s at 2; docs/performance.md).
constexpr double kKeptLargeBlockSlack = 1.0;

/// A kept block serves a request of up to this fraction less than its size (released: any
/// request it holds).
constexpr double kKeptBlockFit = 0.125;

/// Gives back to the system every kept large block and the heap's free pages, and starts
/// the bound of kept blocks again from the bytes now in use. For the end of one workload in a
/// process that goes on with another (train --auto --measure trains one candidate after
/// another): without it the next one's blocks, of other sizes, are mapped beside the first
/// one's kept blocks, up to twice the larger peak, and the heap keeps its freed pages.
void release_host_memory();

/// A block of host memory aligned to 4096 bytes (kIoAlignment) at least.
struct HostBlock {
  void* data = nullptr;
  size_t bytes = 0;     ///< what was asked for
  bool mapped = false;  ///< a mapping of its own, not heap memory
  size_t capacity = 0;  ///< a mapped block's size (bytes rounded up to pages, or a kept block's)
};

/// `bytes` bytes (uninitialised): a mapped block when bytes >= kMappedBlockBytes (a kept
/// one when one fits), else from the heap. Throws std::bad_alloc.
HostBlock allocate_host_block(size_t bytes);
/// Returns `block`: a mapped block is kept for reuse (within the bound above), a heap block
/// freed; nothing for an empty one.
void free_host_block(const HostBlock& block);

/// Bytes of large blocks now mapped (in use and kept) and in use; for tests and reports.
struct LargeBlockBytes {
  size_t mapped = 0, in_use = 0, peak_in_use = 0;
};
LargeBlockBytes large_block_bytes();

/// For owners that keep a block behind an opaque pointer (libtorch's DataPtr context): a
/// block on the free store, and its deleter, which frees the memory and the HostBlock.
HostBlock* new_host_block(size_t bytes);
void delete_host_block(void* block);

}  // namespace trident
