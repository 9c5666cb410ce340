// train.allocator's two ways with large host blocks, each mapped on its own and kept for
// reuse: within twice the most ever in use, or ("release") within the most ever in use,
// for tensors (through the tracked CPU allocator) and for the tier's aligned buffers alike.
#include <ATen/ATen.h>  // at::empty
#include <gtest/gtest.h>
#include <malloc.h>  // mallopt
#include <unistd.h>  // sysconf

#include <cstdint>
#include <cstring>  // std::memset
#include <fstream>
#include <string>
#include <vector>

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

TEST(HostMemory, large_blocks_are_mapped_and_aligned_small_ones_come_from_the_heap) {
  for (const bool release : {true, false}) {
    ReleaseLargeBlocks mode(release);
    HostBlock big = allocate_host_block(kMappedBlockBytes);
    HostBlock small = allocate_host_block(kMappedBlockBytes - 1);
    EXPECT_TRUE(big.mapped);
    EXPECT_GE(big.capacity, big.bytes);
    EXPECT_FALSE(small.mapped);
    for (const HostBlock& b : {big, small}) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data) % kIoAlignment, 0u);
      std::memset(b.data, 1, b.bytes);  // all of it is writable
    }
    free_host_block(big);
    free_host_block(small);
  }
  free_host_block(HostBlock{});  // an empty block: nothing to do
}

TEST(HostMemory, a_kept_block_serves_the_next_request_of_about_its_size) {
  ReleaseLargeBlocks keep(false);
  HostBlock first = allocate_host_block(8 * kMiB);
  void* const where = first.data;
  free_host_block(first);
  HostBlock same = allocate_host_block(8 * kMiB - 4096);  // within kKeptBlockFit of it
  EXPECT_EQ(same.data, where);
  EXPECT_EQ(same.capacity, static_cast<size_t>(8 * kMiB));
  HostBlock other = allocate_host_block(4 * kMiB);  // half its size: a mapping of its own
  EXPECT_NE(other.data, where);
  free_host_block(other);
  free_host_block(same);
}

/// Requests of ever new sizes, each freed before the next: what is kept would grow without
/// bound, and the mapped bytes stay within (1 + slack) x the peak in use.
void expect_new_sizes_within(double slack) {
  for (int64_t mib = 2; mib <= 40; mib += 2) {
    HostBlock b = allocate_host_block(mib * kMiB);
    std::memset(b.data, 1, b.bytes);
    free_host_block(b);
    const LargeBlockBytes now = large_block_bytes();
    EXPECT_LE(static_cast<double>(now.mapped),
              (1 + slack) * static_cast<double>(now.peak_in_use) + 1)
        << mib << " MiB";
  }
}

TEST(HostMemory, kept_blocks_stay_within_the_bound_of_the_most_ever_in_use) {
  ReleaseLargeBlocks keep(false);
  expect_new_sizes_within(kKeptLargeBlockSlack);
  // An attention-like pattern, three layers whose scores are kept while two temporaries of
  // the same size come and go, then a backward of three temporaries a layer: five blocks
  // are mapped, the most ever in use at once, and every other request reuses one.
  { ReleaseLargeBlocks release(true); }  // nothing kept from above
  const LargeBlockBytes before = large_block_bytes();
  std::vector<HostBlock> kept;
  for (int layer = 0; layer < 3; ++layer) {
    HostBlock t1 = allocate_host_block(16 * kMiB), t2 = allocate_host_block(16 * kMiB);
    free_host_block(t1);
    kept.push_back(allocate_host_block(16 * kMiB));
    free_host_block(t2);
  }
  for (int layer = 0; layer < 3; ++layer) {
    HostBlock g1 = allocate_host_block(16 * kMiB), g2 = allocate_host_block(16 * kMiB);
    free_host_block(g1);
    HostBlock g3 = allocate_host_block(16 * kMiB);
    free_host_block(g2);
    free_host_block(g3);
    free_host_block(kept.back());
    kept.pop_back();
  }
  const LargeBlockBytes after = large_block_bytes();
  EXPECT_EQ(after.in_use, before.in_use);
  EXPECT_EQ(after.mapped, before.mapped + 5 * 16 * kMiB);
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

TEST(HostMemory, released_blocks_stay_within_the_most_ever_in_use) {
  ReleaseLargeBlocks release(true);
  expect_new_sizes_within(0.0);
  // A block of a size in use before is taken again, not mapped anew.
  const LargeBlockBytes before = large_block_bytes();
  HostBlock again = allocate_host_block(40 * kMiB);
  EXPECT_EQ(large_block_bytes().mapped, before.mapped);
  free_host_block(again);
}

TEST(HostMemory, a_released_block_serves_a_smaller_request_with_only_its_pages) {
  ReleaseLargeBlocks release(true);
  HostBlock big = allocate_host_block(64 * kMiB);
  std::memset(big.data, 1, big.bytes);
  void* const where = big.data;
  free_host_block(big);
  const int64_t kept = resident_bytes();
  HostBlock small = allocate_host_block(8 * kMiB);
  EXPECT_EQ(small.data, where) << "a new mapping, not the kept block";
  // Its 56 MiB past the request left the resident set.
  EXPECT_LT(resident_bytes(), kept - 48 * kMiB);
  std::memset(small.data, 2, small.bytes);
  free_host_block(small);
}

TEST(HostMemory, a_released_tensor_and_buffer_leave_room_for_the_next_request) {
  keep_freed_memory_as_trident_does();
  install_memory_tracker();
  ReleaseLargeBlocks release(true);
  // 128 MiB touched and freed, then 200 MiB: the most ever in use is 200 MiB, so the
  // freed 128 MiB goes back to the system (kept, 328 MiB would be resident).
  constexpr int64_t kFirst = 128 * kMiB, kSecond = 200 * kMiB;
  const int64_t before = resident_bytes();
  {
    at::Tensor t = at::empty({kFirst / 4}, at::kFloat);
    t.fill_(1.0f);
  }
  EXPECT_GE(resident_bytes() - before, kFirst * 9 / 10) << "kept for the next request";
  {
    AlignedBuffer buffer(kSecond);
    std::memset(buffer.data(), 1, buffer.size());
    EXPECT_LT(resident_bytes() - before, kSecond + kFirst / 2) << "the freed tensor stayed";
    EXPECT_GE(resident_bytes() - before, kSecond * 9 / 10);
  }
}

TEST(HostMemory, a_kept_tensor_stays_resident_for_reuse) {
  keep_freed_memory_as_trident_does();
  install_memory_tracker();
  ReleaseLargeBlocks keep(false);
  EXPECT_GE(tensor_residency().freed, kTouched * 9 / 10) << "the heap gave the memory back";
}

TEST(HostMemory, release_gives_back_kept_blocks_and_the_heaps_free_pages) {
  keep_freed_memory_as_trident_does();
  install_memory_tracker();
  ReleaseLargeBlocks keep(false);
  release_host_memory();  // nothing kept from the tests before: the tensor maps anew
  // One workload's memory, freed: a kept 64 MiB tensor and 64 MiB of small heap blocks,
  // both still resident.
  const int64_t before = resident_bytes();
  const Residency tensor = tensor_residency();
  std::vector<HostBlock> small;
  for (int64_t b = 0; b < kTouched / (kMappedBlockBytes / 2); ++b) {
    small.push_back(allocate_host_block(kMappedBlockBytes / 2));
    std::memset(small.back().data, 1, small.back().bytes);
  }
  for (const HostBlock& b : small) free_host_block(b);
  ASSERT_GE(tensor.freed, kTouched * 9 / 10);
  ASSERT_GE(resident_bytes() - before, 2 * kTouched * 9 / 10) << "the heap gave its pages back";
  release_host_memory();
  EXPECT_LT(resident_bytes() - before, kTouched / 10);
  // The next workload's bound starts from what is in use, not from the first one's peak.
  const LargeBlockBytes now = large_block_bytes();
  EXPECT_EQ(now.mapped, now.in_use);
  EXPECT_EQ(now.peak_in_use, now.in_use);
}

}  // namespace
}  // namespace trident
