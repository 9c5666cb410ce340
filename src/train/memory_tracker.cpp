// A c10::Allocator that delegates to libtorch's CPU allocator and counts live bytes.
#include "train/memory_tracker.h"

#include <c10/core/Allocator.h>     // c10::Allocator, DataPtr
#include <c10/core/CPUAllocator.h>  // GetCPUAllocator, SetCPUAllocator

#include <atomic>

namespace trident {

namespace {

std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};
std::atomic<bool> g_installed{false};

struct Allocation {
  c10::DataPtr inner;
  int64_t bytes;
};

class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* inner) : inner_(inner) {}

  c10::DataPtr allocate(size_t n) const override {
    c10::DataPtr inner = inner_->allocate(n);
    void* data = inner.get();
    const c10::Device device = inner.device();
    auto* ctx = new Allocation{std::move(inner), static_cast<int64_t>(n)};
    const int64_t now = g_live.fetch_add(ctx->bytes) + ctx->bytes;
    int64_t peak = g_peak.load();
    while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
    }
    return {data, ctx, &release, device};
  }

  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

 private:
  static void release(void* ctx) {
    auto* a = static_cast<Allocation*>(ctx);
    g_live.fetch_sub(a->bytes);
    delete a;
  }
  c10::Allocator* inner_;
};

}  // namespace

void install_memory_tracker() {
  if (g_installed.exchange(true)) return;
  static CountingAllocator allocator(c10::GetCPUAllocator());
  c10::SetCPUAllocator(&allocator, /*priority=*/100);
}

bool memory_tracker_installed() { return g_installed.load(); }
int64_t live_tensor_bytes() { return g_live.load(); }
int64_t peak_tensor_bytes() { return g_peak.load(); }
void reset_peak_tensor_bytes() { g_peak.store(g_live.load()); }

}  // namespace trident
