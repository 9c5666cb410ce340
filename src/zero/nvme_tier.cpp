// NvmeTier: the file layout of pieces and planes, and the read-ahead / write-behind
// pipeline over the ring of buffers.
#include "zero/nvme_tier.h"

#include <ATen/ATen.h>           // at::from_blob
#include <c10/util/Exception.h>  // TORCH_CHECK

#include <algorithm>  // std::max, std::min
#include <chrono>     // std::chrono::steady_clock
#include <stdexcept>  // std::runtime_error

#include "common/stopwatch.h"  // seconds_since

namespace trident {

size_t NvmeTier::record_bytes(const std::vector<at::ScalarType>& planes, int64_t max_piece) {
  size_t bytes = 0;
  for (at::ScalarType t : planes)
    bytes += align_up(static_cast<size_t>(max_piece) * c10::elementSize(t));
  return bytes;
}

NvmeTier::NvmeTier(const std::string& path, std::vector<at::ScalarType> planes,
                   std::vector<int64_t> pieces, std::shared_ptr<TierRing> ring, AsyncIo& io)
    : path_(path),
      planes_(std::move(planes)),
      pieces_(std::move(pieces)),
      ring_(std::move(ring)),
      io_(io) {
  TORCH_CHECK(ring_->buffers.size() >= 3, "nvme tier: the ring needs 3 buffers at least");
  int64_t max_piece = 0;
  for (int64_t n : pieces_) max_piece = std::max(max_piece, n);
  offsets_.resize(planes_.size());
  size_t slot_offset = 0;
  for (size_t p = 0; p < planes_.size(); ++p) {
    slot_offsets_.push_back(slot_offset);
    slot_offset += align_up(static_cast<size_t>(max_piece) * c10::elementSize(planes_[p]));
    for (size_t k = 0; k < pieces_.size(); ++k) {
      offsets_[p].push_back(file_bytes_);
      file_bytes_ += static_cast<int64_t>(plane_bytes(p, k));
    }
  }
  TORCH_CHECK(ring_->buffers.front().size() >= slot_offset, "nvme tier: ring buffers of ",
              ring_->buffers.front().size(), " bytes are smaller than a record of ", slot_offset);
  file_ = std::make_unique<TierFile>(path, file_bytes_);
}

size_t NvmeTier::plane_bytes(size_t plane, size_t piece) const {
  // Whole blocks, so that O_DIRECT accepts every transfer.
  return align_up(static_cast<size_t>(pieces_[piece]) * c10::elementSize(planes_[plane]));
}

uint64_t NvmeTier::post(size_t slot, size_t plane, size_t piece, bool write) {
  return post_at(ring_->buffers[slot].data() + slot_offsets_[plane], plane, piece, write);
}

uint64_t NvmeTier::post_read(size_t piece, size_t plane, void* dst) {
  return post_at(static_cast<char*>(dst), plane, piece, false);
}

uint64_t NvmeTier::post_write(size_t piece, size_t plane, const void* src) {
  // The engine only reads a write's buffer.
  return post_at(static_cast<char*>(const_cast<void*>(src)), plane, piece, true);
}

void NvmeTier::drain() noexcept { io_.drain(); }

void NvmeTier::finish_all(const std::vector<uint64_t>& tickets) {
  try {
    for (uint64_t t : tickets) wait(t);
  } catch (...) {
    drain();
    throw;
  }
}

uint64_t NvmeTier::post_at(char* memory, size_t plane, size_t piece, bool write) {
  TORCH_CHECK(reinterpret_cast<uintptr_t>(memory) % kIoAlignment == 0,
              "nvme tier: a transfer's memory must be aligned to ", kIoAlignment, " bytes");
  IoRequest r;
  r.fd = file_->fd();
  r.write = write;
  r.buffer = memory;
  r.length = plane_bytes(plane, piece);
  r.offset = static_cast<off_t>(offsets_[plane][piece]);
  (write ? stats_.bytes_written : stats_.bytes_read) += static_cast<int64_t>(r.length);
  return io_.submit(r);
}

void NvmeTier::wait(uint64_t ticket) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    io_.wait(ticket);
  } catch (const std::runtime_error& e) {
    // What failed, where, and what the user can do about it.
    throw std::runtime_error(std::string(e.what()) + " in the tier file " + path_ +
                             " (this rank's " + std::to_string(file_bytes_) +
                             " bytes); free space on that disk or point parallel.nvme_path at "
                             "a local disk with room, then resume with checkpoint.load = "
                             "\"auto\"");
  }
  stats_.wait_s += seconds_since(t0);
}

void NvmeTier::stream(const Visit& visit, bool read, bool write, int unchanged) {
  const auto t0 = std::chrono::steady_clock::now();
  const size_t slots = ring_->buffers.size(), count = pieces_.size();
  const size_t ahead = slots - 2;  // one buffer being visited, one being written
  std::vector<std::vector<uint64_t>> reads(slots), writes(slots);
  auto settle = [&](std::vector<uint64_t>& tickets) {
    // Each ticket leaves the list before it is waited for: one that failed is done with.
    while (!tickets.empty()) {
      const uint64_t t = tickets.front();
      tickets.erase(tickets.begin());
      wait(t);
    }
  };
  auto prepare = [&](size_t k) {
    const size_t s = k % slots;
    settle(writes[s]);  // the buffer's previous piece must be on disk first
    if (read)
      for (size_t p = 0; p < planes_.size(); ++p) reads[s].push_back(post(s, p, k, false));
  };
  try {
    for (size_t k = 0; k < std::min(ahead, count); ++k) prepare(k);
    for (size_t k = 0; k < count; ++k) {
      const size_t s = k % slots;
      settle(reads[s]);
      std::vector<at::Tensor> views;
      for (size_t p = 0; p < planes_.size(); ++p)
        views.push_back(at::from_blob(ring_->buffers[s].data() + slot_offsets_[p], {pieces_[k]},
                                      at::TensorOptions().dtype(planes_[p])));
      visit(k, views);
      if (write)
        for (size_t p = 0; p < planes_.size(); ++p)
          if (static_cast<int>(p) != unchanged) writes[s].push_back(post(s, p, k, true));
      if (k + ahead < count) prepare(k + ahead);
    }
    for (auto& w : writes) settle(w);
  } catch (...) {
    // Transfers in flight use the ring: let them end before anyone frees it.
    io_.drain();
    throw;
  }
  stats_.stream_s += seconds_since(t0);
}

}  // namespace trident
