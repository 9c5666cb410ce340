// The disk's sequential bandwidth as the nvme offload tier sees it: O_DIRECT (where the
// filesystem accepts it) transfers of whole blocks through the tier's own AsyncIo.
#pragma once
#include <string>  // std::string

namespace trident::calibrate {

/// What one rank measured writing, then reading back, a scratch file under a directory.
struct DiskBandwidth {
  double write_gbps = 0, read_gbps = 0;  ///< 1e9 bytes per second
  bool direct = false;                   ///< O_DIRECT accepted (else through the page cache)
  std::string backend;                   ///< "io_uring" or "threads"
};

/// Writes `bytes` to a fresh file under `dir` in blocks of `block` bytes, four in flight,
/// then reads it back; the file is unlinked at once and closed at return.
DiskBandwidth disk_bandwidth(const std::string& dir, long long bytes, long long block);

}  // namespace trident::calibrate
