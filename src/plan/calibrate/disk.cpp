// disk_bandwidth: a TierFile written and read block by block, four transfers in flight.
#include "plan/calibrate/disk.h"

#include <unistd.h>  // getpid

#include <chrono>   // std::chrono::steady_clock
#include <cstring>  // std::memset
#include <deque>    // std::deque
#include <vector>

#include "common/aligned_buffer.h"  // AlignedBuffer
#include "common/async_io.h"        // make_async_io
#include "common/tier_file.h"       // TierFile

namespace trident::calibrate {
namespace {

constexpr int kInFlight = 4;

/// Seconds to move every block of `file` in one direction.
double pass(AsyncIo& io, const TierFile& file, std::vector<AlignedBuffer>& buffers, long long bytes,
            long long block, bool write) {
  const auto t0 = std::chrono::steady_clock::now();
  std::deque<uint64_t> tickets;
  long long k = 0;
  for (long long offset = 0; offset < bytes; offset += block, ++k) {
    if (static_cast<int>(tickets.size()) == kInFlight) {
      io.wait(tickets.front());
      tickets.pop_front();
    }
    IoRequest r;
    r.fd = file.fd();
    r.write = write;
    r.buffer = buffers[k % kInFlight].data();
    r.length = static_cast<size_t>(block);
    r.offset = static_cast<off_t>(offset);
    tickets.push_back(io.submit(r));
  }
  for (uint64_t t : tickets) io.wait(t);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

DiskBandwidth disk_bandwidth(const std::string& dir, long long bytes, long long block) {
  block = static_cast<long long>(align_up(static_cast<size_t>(block)));
  bytes = bytes / block * block;
  const std::string path = dir + "/trident-calibrate-" + std::to_string(getpid()) + ".tier";
  TierFile file(path, static_cast<off_t>(bytes));
  const std::unique_ptr<AsyncIo> io = make_async_io(kInFlight * 2);
  std::vector<AlignedBuffer> buffers;
  for (int i = 0; i < kInFlight; ++i) {
    buffers.emplace_back(static_cast<size_t>(block));
    std::memset(buffers.back().data(), i + 1, buffers.back().size());
  }
  DiskBandwidth out;
  out.direct = file.direct();
  out.backend = io->name();
  out.write_gbps = static_cast<double>(bytes) / pass(*io, file, buffers, bytes, block, true) / 1e9;
  out.read_gbps = static_cast<double>(bytes) / pass(*io, file, buffers, bytes, block, false) / 1e9;
  return out;
}

}  // namespace trident::calibrate
