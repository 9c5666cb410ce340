// XXH64, following the reference algorithm (four lanes over 32-byte stripes, then the tail
// in 8-, 4- and 1-byte steps, then the avalanche).
#include "checkpoint/checksum.h"

#include <cstdio>   // std::snprintf
#include <cstring>  // std::memcpy

namespace trident::checkpoint {

namespace {

constexpr uint64_t kP1 = 11400714785074694791ULL;
constexpr uint64_t kP2 = 14029467366897019727ULL;
constexpr uint64_t kP3 = 1609587929392839161ULL;
constexpr uint64_t kP4 = 9650029242287828579ULL;
constexpr uint64_t kP5 = 2870177450012600261ULL;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// The checkpoint formats are little-endian, and so are the hosts trident runs on.
uint64_t read64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t read32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

uint64_t round(uint64_t acc, uint64_t input) {
  acc += input * kP2;
  acc = rotl(acc, 31);
  return acc * kP1;
}

uint64_t merge_round(uint64_t acc, uint64_t v) {
  acc ^= round(0, v);
  return acc * kP1 + kP4;
}

}  // namespace

Xxh64::Xxh64(uint64_t seed) : seed_(seed) {
  v_[0] = seed + kP1 + kP2;
  v_[1] = seed + kP2;
  v_[2] = seed;
  v_[3] = seed - kP1;
}

void Xxh64::update(const void* data, size_t length) {
  const auto* p = static_cast<const unsigned char*>(data);
  total_ += length;
  if (buffered_ + length < 32) {
    std::memcpy(buffer_ + buffered_, p, length);
    buffered_ += length;
    return;
  }
  if (buffered_ > 0) {
    const size_t fill = 32 - buffered_;
    std::memcpy(buffer_ + buffered_, p, fill);
    for (int i = 0; i < 4; ++i) v_[i] = round(v_[i], read64(buffer_ + 8 * i));
    p += fill;
    length -= fill;
    buffered_ = 0;
  }
  while (length >= 32) {
    for (int i = 0; i < 4; ++i) v_[i] = round(v_[i], read64(p + 8 * i));
    p += 32;
    length -= 32;
  }
  std::memcpy(buffer_, p, length);
  buffered_ = length;
}

uint64_t Xxh64::digest() const {
  uint64_t h;
  if (total_ >= 32) {
    h = rotl(v_[0], 1) + rotl(v_[1], 7) + rotl(v_[2], 12) + rotl(v_[3], 18);
    for (int i = 0; i < 4; ++i) h = merge_round(h, v_[i]);
  } else {
    h = seed_ + kP5;
  }
  h += total_;
  const unsigned char* p = buffer_;
  size_t left = buffered_;
  while (left >= 8) {
    h ^= round(0, read64(p));
    h = rotl(h, 27) * kP1 + kP4;
    p += 8;
    left -= 8;
  }
  if (left >= 4) {
    h ^= static_cast<uint64_t>(read32(p)) * kP1;
    h = rotl(h, 23) * kP2 + kP3;
    p += 4;
    left -= 4;
  }
  while (left > 0) {
    h ^= (*p) * kP5;
    h = rotl(h, 11) * kP1;
    ++p;
    --left;
  }
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

uint64_t xxh64(const void* data, size_t length, uint64_t seed) {
  Xxh64 h(seed);
  h.update(data, length);
  return h.digest();
}

std::string to_hex(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace trident::checkpoint
