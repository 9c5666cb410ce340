// The disk's sequential bandwidth as the nvme offload tier sees it: O_DIRECT (where the
// filesystem accepts it) transfers of whole blocks through the tier's own AsyncIo.
#pragma once
#include <functional>  // std::function
#include <string>      // std::string

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

/// How much of the disk's time hides behind computation: the write and read passes of
/// disk_bandwidth alone (`io_s`), then again from a second thread while this one runs
/// `step` back to back. `lost_s` is the time the steps lost beside the passes (their
/// wall time less as many steps alone); overlap = 1 - lost_s / io_s, within [0, 1]: 1
/// when the disk moves the bytes while the core computes, 0 when the transfers cost the
/// core as much time as they take.
struct DiskOverlap {
  double overlap = 1.0, io_s = 0, lost_s = 0;
};
DiskOverlap disk_overlap(const std::string& dir, long long bytes, long long block,
                         const std::function<void()>& step);

}  // namespace trident::calibrate
