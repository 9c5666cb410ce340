// Large host blocks: mapped on their own, kept for reuse within a bound (see host_memory.h).
#include "common/host_memory.h"

#include <malloc.h>    // malloc_trim
#include <sys/mman.h>  // mmap, madvise, munmap

#include <algorithm>  // std::max
#include <atomic>
#include <cstdint>  // uintptr_t
#include <cstdlib>  // posix_memalign, free
#include <map>      // std::multimap
#include <mutex>
#include <new>      // std::bad_alloc
#include <utility>  // std::pair
#include <vector>

#include "common/aligned_buffer.h"  // kIoAlignment

namespace trident {

namespace {

std::atomic<bool> g_release{false};

constexpr size_t kPage = 4096;

/// `bytes` rounded up to whole pages: what a block in use counts, whatever its capacity.
size_t pages(size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

/// The large blocks: those kept for reuse, by size, and the bytes mapped and in use.
struct LargeBlocks {
  std::mutex mutex;
  std::multimap<size_t, void*> kept;
  size_t kept_bytes = 0, in_use = 0, peak_in_use = 0;
};

LargeBlocks& large_blocks() {
  static auto* blocks = new LargeBlocks();  // never destroyed: blocks may outlive statics
  return *blocks;
}

void unmap(const std::vector<std::pair<size_t, void*>>& blocks) {
  for (const auto& [size, data] : blocks) munmap(data, size);
}

/// A mapped block of at least `bytes`: a kept one that fits, else a new mapping, after
/// unmapping kept blocks (the largest first) that would take the mapped bytes past the
/// bound.
HostBlock map_large_block(size_t bytes) {
  HostBlock block;
  block.bytes = bytes;
  block.mapped = true;
  const size_t want = pages(bytes);
  std::vector<std::pair<size_t, void*>> evicted;
  {
    LargeBlocks& lb = large_blocks();
    std::lock_guard<std::mutex> lock(lb.mutex);
    auto fit = lb.kept.lower_bound(want);
    if (fit != lb.kept.end() &&
        (releases_large_blocks() ||
         static_cast<double>(fit->first) <= static_cast<double>(want) * (1.0 + kKeptBlockFit))) {
      // The smallest kept block that holds the request (released: of any size, its pages
      // beyond the request given back below; kept: within kKeptBlockFit). Of the blocks of
      // that size, the last freed: its pages are the likeliest in cache.
      fit = std::prev(lb.kept.upper_bound(fit->first));
      block.capacity = fit->first;
      block.data = fit->second;
      lb.kept.erase(fit);
      lb.kept_bytes -= block.capacity;
      lb.in_use += want;
      lb.peak_in_use = std::max(lb.peak_in_use, lb.in_use);
    }
  }
  if (block.data != nullptr) {
    // Released: the pages past the request (from the next huge page on) leave the resident
    // set, which so holds what is in use; a later, larger request faults them in again.
    const size_t huge = size_t{2} << 20;
    const uintptr_t start = reinterpret_cast<uintptr_t>(block.data);
    const uintptr_t tail = (start + want + huge - 1) / huge * huge;
    if (releases_large_blocks() && tail < start + block.capacity)
      madvise(reinterpret_cast<void*>(tail), start + block.capacity - tail, MADV_DONTNEED);
    return block;
  }
  {
    LargeBlocks& lb = large_blocks();
    std::lock_guard<std::mutex> lock(lb.mutex);
    lb.in_use += want;
    lb.peak_in_use = std::max(lb.peak_in_use, lb.in_use);
    // Released: within the most ever in use, the resident set's bound when every free was
    // unmapped, without faulting each reused block in again.
    const double slack = releases_large_blocks() ? 0.0 : kKeptLargeBlockSlack;
    const double bound = (1.0 + slack) * static_cast<double>(lb.peak_in_use);
    while (!lb.kept.empty() && static_cast<double>(lb.in_use + lb.kept_bytes) > bound) {
      const auto largest = std::prev(lb.kept.end());
      evicted.emplace_back(largest->first, largest->second);
      lb.kept_bytes -= largest->first;
      lb.kept.erase(largest);
    }
  }
  unmap(evicted);
  void* p = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    LargeBlocks& lb = large_blocks();
    std::lock_guard<std::mutex> lock(lb.mutex);
    lb.in_use -= want;
    throw std::bad_alloc();
  }
  // Under the tighter bound blocks are unmapped and faulted in again more often: advise
  // transparent huge pages, one fault per 2 MiB (a tier configuration's step 1.30 s with
  // them, 1.80 s without). A kept block under the wider bound is faulted in once, and huge
  // pages made the steps that reuse it slower (7% on a Llama of hidden 384).
  if (releases_large_blocks()) madvise(p, want, MADV_HUGEPAGE);
  block.data = p;
  block.capacity = want;
  return block;
}

void keep(const HostBlock& block) {
  LargeBlocks& lb = large_blocks();
  std::lock_guard<std::mutex> lock(lb.mutex);
  lb.in_use -= pages(block.bytes);
  lb.kept.emplace(block.capacity, block.data);
  lb.kept_bytes += block.capacity;
}

/// Unmaps every kept block; with `restart_bound`, the most ever in use becomes what is in
/// use now.
void unmap_kept(bool restart_bound) {
  std::vector<std::pair<size_t, void*>> kept;
  {
    LargeBlocks& lb = large_blocks();
    std::lock_guard<std::mutex> lock(lb.mutex);
    kept.assign(lb.kept.begin(), lb.kept.end());
    lb.kept.clear();
    lb.kept_bytes = 0;
    if (restart_bound) lb.peak_in_use = lb.in_use;
  }
  unmap(kept);
}

}  // namespace

void set_release_large_blocks(bool release) {
  g_release.store(release);
  // Releasing from now on: what is kept goes back, and the tighter bound starts empty.
  if (release) unmap_kept(/*restart_bound=*/false);
}

bool releases_large_blocks() { return g_release.load(); }

void release_host_memory() {
  unmap_kept(/*restart_bound=*/true);
  malloc_trim(0);  // the heap is never trimmed on its own (cli/main.cpp)
}

HostBlock allocate_host_block(size_t bytes) {
  if (bytes >= kMappedBlockBytes) return map_large_block(bytes);
  HostBlock block;
  block.bytes = bytes;
  if (bytes == 0) return block;
  if (posix_memalign(&block.data, kIoAlignment, bytes) != 0) throw std::bad_alloc();
  return block;
}

void free_host_block(const HostBlock& block) {
  if (block.data == nullptr) return;
  if (block.mapped) {
    keep(block);
  } else {
    std::free(block.data);
  }
}

LargeBlockBytes large_block_bytes() {
  LargeBlocks& lb = large_blocks();
  std::lock_guard<std::mutex> lock(lb.mutex);
  return {lb.in_use + lb.kept_bytes, lb.in_use, lb.peak_in_use};
}

HostBlock* new_host_block(size_t bytes) { return new HostBlock(allocate_host_block(bytes)); }

void delete_host_block(void* block) {
  auto* b = static_cast<HostBlock*>(block);
  free_host_block(*b);
  delete b;
}

}  // namespace trident
