// A heap buffer aligned for O_DIRECT transfers (4096 bytes, a multiple of every logical
// block size in use), owned and freed like a unique_ptr.
#pragma once
#include <cstddef>  // size_t
#include <cstdlib>  // posix_memalign, free
#include <new>      // std::bad_alloc
#include <utility>  // std::swap

namespace trident {

/// Alignment of buffers, file offsets and transfer lengths of the nvme tier.
constexpr size_t kIoAlignment = 4096;

/// `n` rounded up to a multiple of kIoAlignment.
constexpr size_t align_up(size_t n) { return (n + kIoAlignment - 1) / kIoAlignment * kIoAlignment; }

/// `bytes` (rounded up to kIoAlignment) of uninitialised memory at a kIoAlignment boundary.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) : size_(align_up(bytes)) {
    if (size_ > 0 && posix_memalign(&data_, kIoAlignment, size_) != 0) throw std::bad_alloc();
  }
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(AlignedBuffer&& o) noexcept : data_(o.data_), size_(o.size_) {
    o.data_ = nullptr;
    o.size_ = 0;
  }
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  char* data() const { return static_cast<char*>(data_); }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace trident
