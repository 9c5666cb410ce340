// Large host blocks: heap or mappings of their own (see host_memory.h).
#include "common/host_memory.h"

#include <sys/mman.h>  // mmap, madvise, munmap

#include <atomic>
#include <cstdlib>  // posix_memalign, free
#include <new>      // std::bad_alloc

#include "common/aligned_buffer.h"  // kIoAlignment

namespace trident {

namespace {
std::atomic<bool> g_release{false};
}  // namespace

void set_release_large_blocks(bool release) { g_release.store(release); }
bool releases_large_blocks() { return g_release.load(); }

HostBlock allocate_host_block(size_t bytes) {
  HostBlock block;
  block.bytes = bytes;
  if (bytes == 0) return block;
  if (bytes >= kMappedBlockBytes && releases_large_blocks()) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    // Advice only: without transparent huge pages the block still works, in 4 KiB pages.
    madvise(p, bytes, MADV_HUGEPAGE);
    block.data = p;
    block.mapped = true;
    return block;
  }
  if (posix_memalign(&block.data, kIoAlignment, bytes) != 0) throw std::bad_alloc();
  return block;
}

void free_host_block(const HostBlock& block) {
  if (block.data == nullptr) return;
  if (block.mapped) {
    munmap(block.data, block.bytes);
  } else {
    std::free(block.data);
  }
}

HostBlock* new_host_block(size_t bytes) { return new HostBlock(allocate_host_block(bytes)); }

void delete_host_block(void* block) {
  auto* b = static_cast<HostBlock*>(block);
  free_host_block(*b);
  delete b;
}

}  // namespace trident
