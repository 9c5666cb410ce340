// Asynchronous file transfers for the nvme tier: io_uring where the kernel (or a container's
// seccomp filter) allows it, else a small pool of threads doing pread/pwrite. Torch-free.
#pragma once
#include <sys/types.h>  // off_t

#include <cstddef>     // size_t
#include <cstdint>     // uint64_t
#include <functional>  // std::function
#include <memory>      // std::unique_ptr
#include <string>

namespace trident {

/// One read or write of `length` bytes at `offset` of `fd`, from or into `buffer`.
struct IoRequest {
  int fd = -1;
  bool write = false;
  void* buffer = nullptr;
  size_t length = 0;
  off_t offset = 0;
};

/// Posts transfers and waits for them by ticket. Not thread-safe: one owner thread.
class AsyncIo {
 public:
  virtual ~AsyncIo() = default;
  /// Posts `request`; the buffer must stay valid until wait() returns for the ticket.
  virtual uint64_t submit(const IoRequest& request) = 0;
  /// Waits for the transfer of `ticket` and forgets it; throws std::runtime_error naming
  /// the failure (errno text, or a short transfer) if it did not move every byte, and
  /// std::logic_error for a ticket that is not in flight (waited for already), which would
  /// otherwise never complete.
  virtual void wait(uint64_t ticket) = 0;
  /// Waits for every transfer in flight and forgets them, whatever their results: what an
  /// owner does before freeing the buffers after one of them failed. Never throws.
  virtual void drain() noexcept = 0;
  /// "io_uring" or "threads": the backend, for the run's header line.
  virtual std::string name() const = 0;
};

/// Which backend make_async_io may use.
enum class IoBackend { kAuto, kUring, kThreads };

/// Whether this trident was built with liburing (the io_uring backend).
bool io_uring_built();

/// An engine with room for `queue_depth` transfers in flight. kAuto probes io_uring
/// (io_uring_queue_init) and falls back to threads when it is refused; kUring throws then.
std::unique_ptr<AsyncIo> make_async_io(int queue_depth, IoBackend backend = IoBackend::kAuto);

/// Seams of the io_uring backend, for tests: `submit_error`, when set, runs before each
/// io_uring_submit and fails it with the -errno it returns (0: submit as usual); one ring
/// entry moves at most `max_entry_bytes` (its length is 32 bits, and the kernel moves under
/// 2 GiB at once), and the rest of a transfer follows as after a short completion.
struct UringSeams {
  std::function<int()> submit_error;
  size_t max_entry_bytes = size_t{1} << 30;
};

/// The io_uring backend with `seams`; throws where make_async_io(kUring) does.
std::unique_ptr<AsyncIo> make_uring_io(int queue_depth, UringSeams seams);

}  // namespace trident
