// A c10::Allocator that delegates to libtorch's CPU allocator and counts live bytes.
#include "common/memory_tracker.h"

#include <c10/core/Allocator.h>     // c10::Allocator, DataPtr
#include <c10/core/CPUAllocator.h>  // GetCPUAllocator, SetCPUAllocator
#include <torch/version.h>          // TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "common/host_memory.h"  // new_host_block, kMappedBlockBytes

namespace trident {

namespace {

std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};
std::atomic<bool> g_installed{false};

struct Allocation {
  c10::DataPtr inner;
  int64_t bytes;
};

// The DataPtr handed out has its data pointer as its context (libtorch's raw_allocate
// requires that), so the inner allocation is found again through this table.
std::mutex g_mutex;
std::unordered_map<void*, Allocation>& allocations() {
  static auto* table = new std::unordered_map<void*, Allocation>();
  return *table;
}

void release(void* data) {
  Allocation a;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = allocations().find(data);
    if (it == allocations().end()) return;
    a = std::move(it->second);
    allocations().erase(it);
  }
  g_live.fetch_sub(a.bytes);
  // `a.inner` frees the memory as it goes out of scope.
}

// libtorch 2.3 made Allocator::allocate non-const and added copy_data.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define TRIDENT_ALLOCATE_CONST
#define TRIDENT_ALLOCATOR_COPIES 1
#else
#define TRIDENT_ALLOCATE_CONST const
#define TRIDENT_ALLOCATOR_COPIES 0
#endif

class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* inner) : inner_(inner) {}

#if TRIDENT_ALLOCATOR_COPIES
  void copy_data(void* dest, const void* src, size_t count) const override {
    default_copy_data(dest, src, count);
  }
#endif

  c10::DataPtr allocate(size_t n) TRIDENT_ALLOCATE_CONST override {
    c10::DataPtr inner = allocate_inner(n);
    void* data = inner.get();
    if (data == nullptr) return inner;  // empty tensors: nothing to count
    const c10::Device device = inner.device();
    const int64_t bytes = static_cast<int64_t>(n);
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      allocations().emplace(data, Allocation{std::move(inner), bytes});
    }
    const int64_t now = g_live.fetch_add(bytes) + bytes;
    int64_t peak = g_peak.load();
    while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
    }
    return {data, data, &release, device};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &release; }

 private:
  /// Blocks of kMappedBlockBytes or more mapped on their own, kept for reuse or released
  /// when freed (host_memory.h); everything else from libtorch's CPU allocator.
  c10::DataPtr allocate_inner(size_t n) const {
    if (n < kMappedBlockBytes) return inner_->allocate(n);
    HostBlock* block = new_host_block(n);
    return {block->data, block, &delete_host_block, c10::Device(c10::DeviceType::CPU)};
  }

  c10::Allocator* inner_;
};

}  // namespace

void install_memory_tracker() {
  if (g_installed.exchange(true)) return;
  static CountingAllocator allocator(c10::GetCPUAllocator());
  c10::SetCPUAllocator(&allocator, /*priority=*/100);
}

int64_t live_tensor_bytes() { return g_live.load(); }
int64_t peak_tensor_bytes() { return g_peak.load(); }
void reset_peak_tensor_bytes() { g_peak.store(g_live.load()); }

}  // namespace trident
