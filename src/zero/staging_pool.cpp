// StagingPool: aligned buffers lent as tensors and taken back by the tensors' deleter.
#include "zero/staging_pool.h"

#include <ATen/ATen.h>  // at::empty

namespace trident {

/// What a lent tensor's DataPtr owns: the buffer and the pool it goes back to.
struct StagingPool::Loan {
  std::shared_ptr<StagingPool> pool;
  AlignedBuffer buffer;
};

at::Tensor StagingPool::take(int64_t numel, at::ScalarType dtype) {
  const size_t room = align_up(static_cast<size_t>(numel) * c10::elementSize(dtype));
  auto* loan = new Loan{shared_from_this(), {}};
  auto it = free_.find(room);
  if (it != free_.end() && !it->second.empty()) {
    loan->buffer = std::move(it->second.back());
    it->second.pop_back();
  } else {
    loan->buffer = AlignedBuffer(room);
    bytes_ += static_cast<int64_t>(loan->buffer.size());
  }
  void* data = loan->buffer.data();
  at::DataPtr memory(data, loan, &StagingPool::give_back, at::Device(at::kCPU));
  c10::Storage storage(c10::Storage::use_byte_size_t(), room, std::move(memory),
                       /*allocator=*/nullptr, /*resizable=*/false);
  return at::empty({0}, at::TensorOptions().dtype(dtype)).set_(storage, 0, {numel}, {1});
}

void StagingPool::give_back(void* loan) {
  auto* l = static_cast<Loan*>(loan);
  const size_t room = l->buffer.size();
  l->pool->free_[room].push_back(std::move(l->buffer));
  delete l;  // drops the pool's reference last
}

}  // namespace trident
