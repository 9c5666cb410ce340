// train.allocator's two ways with large host blocks: kept in the heap, or mapped on their
// own and given back to the system when freed, for tensors (through the tracked CPU
// allocator) and for the tier's aligned buffers alike.
#include <ATen/ATen.h>  // at::empty
#include <gtest/gtest.h>
#include <malloc.h>  // mallopt
#include <unistd.h>  // sysconf

#include <cstdint>
#include <cstring>  // std::memset
#include <fstream>
#include <string>

#include "common/aligned_buffer.h"
#include "common/host_memory.h"
#include "common/memory_tracker.h"

namespace trident {
namespace {

/// Resident bytes of this process now (/proc/self/statm's second field).
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

/// Restores the process-wide setting a test changes.
struct ReleaseLargeBlocks {
  explicit ReleaseLargeBlocks(bool on) : before(releases_large_blocks()) {
    set_release_large_blocks(on);
  }
  ~ReleaseLargeBlocks() { set_release_large_blocks(before); }
  bool before;
};

constexpr int64_t kMiB = 1 << 20;

TEST(HostMemory, large_blocks_are_mapped_and_aligned_only_while_released) {
  {
    ReleaseLargeBlocks release(true);
    HostBlock big = allocate_host_block(kMappedBlockBytes);
    HostBlock small = allocate_host_block(kMappedBlockBytes - 1);
    EXPECT_TRUE(big.mapped);
    EXPECT_FALSE(small.mapped);
    for (const HostBlock& b : {big, small}) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data) % kIoAlignment, 0u);
      std::memset(b.data, 1, b.bytes);  // all of it is writable
    }
    free_host_block(big);
    free_host_block(small);
  }
  ReleaseLargeBlocks keep(false);
  HostBlock big = allocate_host_block(8 * kMiB);
  EXPECT_FALSE(big.mapped);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.data) % kIoAlignment, 0u);
  free_host_block(big);
  free_host_block(HostBlock{});  // an empty block: nothing to do
}

/// The heap as trident's main() sets it up: freed memory is kept, nothing is mmapped.
void keep_freed_memory_as_trident_does() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
}

constexpr int64_t kTouched = 64 * kMiB;

/// Resident bytes a 64 MiB tensor, filled, adds while alive and still adds once freed.
struct Residency {
  int64_t alive = 0, freed = 0;
};
Residency tensor_residency() {
  const int64_t before = resident_bytes();
  Residency r;
  {
    at::Tensor t = at::empty({kTouched / 4}, at::kFloat);
    t.fill_(1.0f);  // touched: resident
    r.alive = resident_bytes() - before;
    EXPECT_EQ(t.sum().item<float>(), static_cast<float>(kTouched / 4));
  }
  r.freed = resident_bytes() - before;
  return r;
}

TEST(HostMemory, a_released_tensor_and_buffer_leave_the_resident_set_when_freed) {
  keep_freed_memory_as_trident_does();
  install_memory_tracker();
  ReleaseLargeBlocks release(true);
  const Residency tensor = tensor_residency();
  EXPECT_GE(tensor.alive, kTouched * 9 / 10);
  EXPECT_LT(tensor.freed, kTouched / 10) << "the tensor's memory stayed resident";
  const int64_t before = resident_bytes();
  {
    AlignedBuffer buffer(kTouched);
    std::memset(buffer.data(), 1, buffer.size());
    EXPECT_GE(resident_bytes() - before, kTouched * 9 / 10);
  }
  EXPECT_LT(resident_bytes() - before, kTouched / 10) << "the buffer's memory stayed resident";
}

TEST(HostMemory, a_kept_tensor_stays_resident_for_reuse) {
  keep_freed_memory_as_trident_does();
  install_memory_tracker();
  ReleaseLargeBlocks keep(false);
  EXPECT_GE(tensor_residency().freed, kTouched * 9 / 10) << "the heap gave the memory back";
}

}  // namespace
}  // namespace trident
