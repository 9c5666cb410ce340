// The nvme tier of ZeRO offload: states of a flat buffer's shard stored in one scratch file,
// piece after piece, and streamed through a ring of aligned buffers so that the read of the
// next pieces, the update of this one and the write of the previous one overlap.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor, at::ScalarType

#include <cstdint>
#include <functional>  // std::function
#include <memory>      // std::shared_ptr
#include <string>
#include <vector>

#include "common/aligned_buffer.h"  // AlignedBuffer
#include "common/async_io.h"        // AsyncIo
#include "common/tier_file.h"       // TierFile

namespace trident {

/// The aligned buffers every tier of a rank streams through, one piece per buffer.
struct TierRing {
  std::vector<AlignedBuffer> buffers;
};

/// What a tier moved and how long its owner waited for it.
struct TierStats {
  int64_t bytes_read = 0, bytes_written = 0;
  double wait_s = 0.0;    // blocked in AsyncIo::wait
  double stream_s = 0.0;  // inside stream(), the updates included
};

class NvmeTier {
 public:
  /// Plane p of piece k holds `pieces[k]` elements of `planes[p]`. The file is laid out
  /// plane after plane, each piece at an aligned offset, so that one plane of one piece
  /// (stage 3's parameter shard) reads alone.
  NvmeTier(const std::string& path, std::vector<at::ScalarType> planes, std::vector<int64_t> pieces,
           std::shared_ptr<TierRing> ring, AsyncIo& io);

  /// The bytes one buffer of the ring needs for the largest piece of `planes`.
  static size_t record_bytes(const std::vector<at::ScalarType>& planes, int64_t max_piece);

  /// Tensors over a piece's planes in a ring buffer, handed to the visitor.
  using Visit = std::function<void(size_t piece, std::vector<at::Tensor>& planes)>;
  /// Visits every piece in order. `read`: the planes come filled from the file (read
  /// ahead by ring size - 2 pieces); `write`: they go back after the visit (written
  /// behind while the next piece is visited), all but `unchanged` (a plane the visit only
  /// reads, or -1). Returns when every write completed.
  void stream(const Visit& visit, bool read, bool write, int unchanged = -1);
  /// Posts a read of plane `plane` of piece `piece` straight into `dst`, and a write out
  /// of `src`: memory at a kIoAlignment boundary with room for the plane's bytes rounded
  /// up to whole blocks, untouched until finish() returned for the ticket. Neither waits,
  /// so a transfer runs while the caller computes; never while stream() runs.
  uint64_t post_read(size_t piece, size_t plane, void* dst);
  uint64_t post_write(size_t piece, size_t plane, const void* src);
  /// Waits for a posted transfer; throws what the disk said, naming the file. After a
  /// throw, drain() before the memory of the other transfers in flight is freed.
  void finish(uint64_t ticket) { wait(ticket); }
  /// Waits for every ticket; after a failure lets the rest land (drain) before throwing.
  void finish_all(const std::vector<uint64_t>& tickets);
  void drain() noexcept;

  int64_t file_bytes() const { return file_bytes_; }
  bool direct() const { return file_->direct(); }
  const TierStats& stats() const { return stats_; }

 private:
  size_t plane_bytes(size_t plane, size_t piece) const;
  uint64_t post(size_t slot, size_t plane, size_t piece, bool write);
  uint64_t post_at(char* memory, size_t plane, size_t piece, bool write);
  void wait(uint64_t ticket);

  std::string path_;
  std::vector<at::ScalarType> planes_;
  std::vector<int64_t> pieces_;
  std::vector<std::vector<int64_t>> offsets_;  // [plane][piece]: byte offset in the file
  std::vector<size_t> slot_offsets_;           // [plane]: byte offset in a ring buffer
  int64_t file_bytes_ = 0;
  std::shared_ptr<TierRing> ring_;
  AsyncIo& io_;
  std::unique_ptr<TierFile> file_;
  TierStats stats_;
};

}  // namespace trident
