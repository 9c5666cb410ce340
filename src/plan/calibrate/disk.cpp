// disk_bandwidth: a TierFile written and read block by block, four transfers in flight;
// disk_overlap: the same passes beside a computation.
#include "plan/calibrate/disk.h"

#include <unistd.h>  // getpid

#include <algorithm>  // std::clamp, std::max
#include <atomic>     // std::atomic
#include <chrono>     // std::chrono::steady_clock
#include <cstring>    // std::memset
#include <deque>      // std::deque
#include <memory>     // std::unique_ptr
#include <thread>     // std::thread
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

namespace {

/// A scratch file under a directory, unlinked at once, with the transfers' buffers.
struct Scratch {
  Scratch(const std::string& dir, long long bytes_in, long long block_in)
      : block(static_cast<long long>(align_up(static_cast<size_t>(block_in)))),
        bytes(bytes_in / block * block),
        file(dir + "/trident-calibrate-" + std::to_string(getpid()) + ".tier",
             static_cast<off_t>(bytes)),
        io(make_async_io(kInFlight * 2)) {
    for (int i = 0; i < kInFlight; ++i) {
      buffers.emplace_back(static_cast<size_t>(block));
      std::memset(buffers.back().data(), i + 1, buffers.back().size());
    }
  }
  double write_s() { return pass(*io, file, buffers, bytes, block, true); }
  double read_s() { return pass(*io, file, buffers, bytes, block, false); }

  long long block, bytes;
  TierFile file;
  std::unique_ptr<AsyncIo> io;
  std::vector<AlignedBuffer> buffers;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

DiskBandwidth disk_bandwidth(const std::string& dir, long long bytes, long long block) {
  Scratch scratch(dir, bytes, block);
  DiskBandwidth out;
  out.direct = scratch.file.direct();
  out.backend = scratch.io->name();
  out.write_gbps = static_cast<double>(scratch.bytes) / scratch.write_s() / 1e9;
  out.read_gbps = static_cast<double>(scratch.bytes) / scratch.read_s() / 1e9;
  return out;
}

DiskOverlap disk_overlap(const std::string& dir, long long bytes, long long block,
                         const std::function<void()>& step) {
  Scratch scratch(dir, bytes, block);
  DiskOverlap out;
  out.io_s = scratch.write_s() + scratch.read_s();
  // The step alone, over about as long as the passes take (at least three steps).
  step();
  auto t0 = std::chrono::steady_clock::now();
  long long n = 0;
  while (n < 3 || seconds_since(t0) < out.io_s) {
    step();
    ++n;
  }
  const double step_s = seconds_since(t0) / static_cast<double>(n);
  // The passes from a second thread (it sleeps in the waits), the steps beside them.
  std::atomic<bool> done{false};
  t0 = std::chrono::steady_clock::now();
  std::thread io([&] {
    scratch.write_s();
    scratch.read_s();
    done = true;
  });
  long long beside = 0;
  while (!done) {
    step();
    ++beside;
  }
  io.join();
  out.lost_s = std::max(0.0, seconds_since(t0) - static_cast<double>(beside) * step_s);
  out.overlap = std::clamp(1.0 - out.lost_s / out.io_s, 0.0, 1.0);
  return out;
}

}  // namespace trident::calibrate
