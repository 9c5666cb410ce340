// File checksums of checkpoints: XXH64 (seed 0), computed while a file is written or read,
// fast enough that every load can check every byte it relies on.
#pragma once
#include <cstddef>  // size_t
#include <cstdint>  // uint64_t
#include <string>   // std::string

namespace trident::checkpoint {

/// Streaming XXH64 (Yann Collet's xxHash, 64-bit variant): feed bytes in any pieces, then
/// digest(); the result equals XXH64 of the concatenation.
class Xxh64 {
 public:
  explicit Xxh64(uint64_t seed = 0);
  void update(const void* data, size_t length);
  uint64_t digest() const;

 private:
  uint64_t v_[4];
  uint64_t total_ = 0;
  unsigned char buffer_[32];
  size_t buffered_ = 0;
  uint64_t seed_;
};

/// XXH64 of a buffer, and its 16-digit lower-case hex form (what the index stores).
uint64_t xxh64(const void* data, size_t length, uint64_t seed = 0);
std::string to_hex(uint64_t value);

}  // namespace trident::checkpoint
