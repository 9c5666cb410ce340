// The two AsyncIo backends: io_uring (liburing) and a thread pool over pread/pwrite.
#include "common/async_io.h"

#if TRIDENT_HAVE_URING
#include <liburing.h>  // io_uring_queue_init, io_uring_prep_read/write, io_uring_wait_cqe
#endif
#include <unistd.h>  // pread, pwrite

#include <algorithm>           // std::min
#include <cerrno>              // errno
#include <condition_variable>  // std::condition_variable
#include <cstring>             // std::strerror
#include <deque>               // std::deque
#include <mutex>               // std::mutex
#include <stdexcept>           // std::runtime_error
#include <thread>              // std::thread
#include <unordered_map>       // std::unordered_map
#include <vector>

namespace trident {
namespace {

/// The error of a transfer that returned `result` (bytes, or -errno) for `request`.
void check_result(const IoRequest& request, long result) {
  if (result == static_cast<long>(request.length)) return;
  const std::string what = request.write ? "write" : "read";
  if (result < 0)
    throw std::runtime_error("nvme tier: " + what + " of " + std::to_string(request.length) +
                             " bytes at offset " + std::to_string(request.offset) +
                             " failed: " + std::strerror(static_cast<int>(-result)));
  throw std::runtime_error("nvme tier: short " + what + " (" + std::to_string(result) + " of " +
                           std::to_string(request.length) + " bytes at offset " +
                           std::to_string(request.offset) + "); is the disk full?");
}

std::logic_error unknown_ticket(uint64_t ticket) {
  return std::logic_error("nvme tier: transfer " + std::to_string(ticket) +
                          " is not in flight (already waited for)");
}

/// pread/pwrite until every byte moved; -errno on failure, else the bytes moved.
long transfer_all(const IoRequest& r) {
  size_t done = 0;
  while (done < r.length) {
    char* at = static_cast<char*>(r.buffer) + done;
    const off_t offset = r.offset + static_cast<off_t>(done);
    const ssize_t n = r.write ? pwrite(r.fd, at, r.length - done, offset)
                              : pread(r.fd, at, r.length - done, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    if (n == 0) break;  // end of file: reported as a short transfer
    done += static_cast<size_t>(n);
  }
  return static_cast<long>(done);
}

#if TRIDENT_HAVE_URING
/// A transfer posted to the ring: moved in entries of at most max_entry_bytes, each short
/// completion followed by an entry for the rest, as transfer_all does.
struct UringTransfer {
  IoRequest request;
  size_t moved = 0;
  int error = 0;  // -errno of the entry that failed
  bool finished = false;
};

// The ring's user data of an entry that carries no transfer (a failed submit's no-op).
constexpr uint64_t kNoTicket = 0;

class UringIo : public AsyncIo {
 public:
  UringIo(io_uring ring, int queue_depth, UringSeams seams)
      : ring_(ring), depth_(static_cast<size_t>(queue_depth)), seams_(std::move(seams)) {}
  ~UringIo() override {
    // Transfers still in flight write into buffers their owners are about to free.
    drain();
    io_uring_queue_exit(&ring_);
  }

  uint64_t submit(const IoRequest& r) override {
    const uint64_t ticket = next_++;
    UringTransfer& t = transfers_[ticket];
    t.request = r;
    const int rc = post(ticket, t);
    if (rc < 0) {  // never handed to the kernel: nothing to wait for
      transfers_.erase(ticket);
      throw std::runtime_error(std::string("nvme tier: io_uring_submit: ") + std::strerror(-rc));
    }
    ++open_;
    return ticket;
  }

  void wait(uint64_t ticket) override {
    const auto it = transfers_.find(ticket);
    if (it == transfers_.end()) throw unknown_ticket(ticket);
    while (!it->second.finished) reap_one();
    const UringTransfer t = it->second;
    transfers_.erase(it);
    check_result(t.request, t.error < 0 ? t.error : static_cast<long>(t.moved));
  }
  void drain() noexcept override {
    // Completions are reaped until every transfer has finished; a ring that cannot be
    // waited on any more has nothing left that could write.
    try {
      while (open_ > 0) reap_one();
    } catch (const std::exception&) {
    }
    transfers_.clear();
    open_ = entries_ = 0;
  }
  std::string name() const override { return "io_uring"; }

 private:
  /// Hands the kernel an entry for the bytes of `t` not moved yet: 0, or the -errno of a
  /// failed submit, which leaves no entry behind that could complete.
  int post(uint64_t ticket, const UringTransfer& t) {
    // At most depth_ entries in flight: the completion queue (twice as deep) never overflows.
    while (entries_ >= depth_) reap_one();
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) {  // full of no-ops left by failed submits: hand them over first
      const int rc = enter();
      if (rc < 0) return rc;
      sqe = io_uring_get_sqe(&ring_);
    }
    const IoRequest& r = t.request;
    char* at = static_cast<char*>(r.buffer) + t.moved;
    const unsigned length =
        static_cast<unsigned>(std::min(r.length - t.moved, seams_.max_entry_bytes));
    const off_t offset = r.offset + static_cast<off_t>(t.moved);
    if (r.write)
      io_uring_prep_write(sqe, r.fd, at, length, offset);
    else
      io_uring_prep_read(sqe, r.fd, at, length, offset);
    io_uring_sqe_set_data64(sqe, ticket);
    const int rc = enter();
    if (rc < 0) {
      // The entry may still be in the submission queue, and the next submit would hand it
      // over: it becomes a no-op that touches no buffer.
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data64(sqe, kNoTicket);
      return rc;
    }
    ++entries_;
    return 0;
  }

  /// io_uring_submit until the kernel has taken every entry (again when interrupted): 0,
  /// or the -errno of the submit that failed.
  int enter() {
    do {
      int rc = seams_.submit_error ? seams_.submit_error() : 0;
      if (rc >= 0) rc = io_uring_submit(&ring_);
      if (rc < 0 && rc != -EINTR) return rc;
    } while (io_uring_sq_ready(&ring_) > 0);
    return 0;
  }

  void reap_one() {
    io_uring_cqe* cqe = nullptr;
    int rc;
    do rc = io_uring_wait_cqe(&ring_, &cqe);
    while (rc == -EINTR);
    if (rc < 0)
      throw std::runtime_error(std::string("nvme tier: io_uring_wait_cqe: ") + std::strerror(-rc));
    const uint64_t ticket = io_uring_cqe_get_data64(cqe);
    const int res = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    if (ticket == kNoTicket) return;
    --entries_;
    complete(ticket, transfers_.at(ticket), res);
  }

  /// An entry of `t` moved `res` bytes (or failed with -errno): `t` finishes, or goes on.
  void complete(uint64_t ticket, UringTransfer& t, int res) {
    if (res > 0) t.moved += static_cast<size_t>(res);
    // 0 bytes: the end of the file, reported as a short transfer.
    if (res > 0 && t.moved < t.request.length) {
      res = post(ticket, t);
      if (res == 0) return;  // else the rest could not be posted: the transfer failed
    }
    t.error = res < 0 ? res : 0;
    t.finished = true;
    --open_;
  }

  io_uring ring_;
  size_t depth_;
  UringSeams seams_;
  uint64_t next_ = 1;
  std::unordered_map<uint64_t, UringTransfer> transfers_;
  size_t open_ = 0;     // transfers not finished
  size_t entries_ = 0;  // entries handed to the kernel, not reaped
};

#endif

class ThreadIo : public AsyncIo {
 public:
  explicit ThreadIo(int threads) {
    for (int t = 0; t < threads; ++t) workers_.emplace_back([this] { run(); });
  }
  ~ThreadIo() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();  // they drain the queue first
  }

  uint64_t submit(const IoRequest& r) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t ticket = next_++;
    queue_.push_back({ticket, r});
    requests_[ticket] = r;
    wake_.notify_one();
    return ticket;
  }

  void wait(uint64_t ticket) override {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto it = requests_.find(ticket);
    if (it == requests_.end()) throw unknown_ticket(ticket);
    finished_.wait(lock, [&] { return done_.count(ticket) > 0; });
    const long result = done_[ticket];
    const IoRequest r = it->second;
    done_.erase(ticket);
    requests_.erase(it);
    lock.unlock();
    check_result(r, result);
  }
  void drain() noexcept override {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return done_.size() == requests_.size(); });
    done_.clear();
    requests_.clear();
  }
  std::string name() const override { return "threads"; }

 private:
  void run() {
    for (;;) {
      std::pair<uint64_t, IoRequest> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = queue_.front();
        queue_.pop_front();
      }
      const long result = transfer_all(job.second);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        done_[job.first] = result;
      }
      finished_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::deque<std::pair<uint64_t, IoRequest>> queue_;
  std::unordered_map<uint64_t, IoRequest> requests_;
  std::unordered_map<uint64_t, long> done_;
  std::vector<std::thread> workers_;
  uint64_t next_ = 1;
  bool stop_ = false;
};

}  // namespace

bool io_uring_built() { return TRIDENT_HAVE_URING != 0; }

std::unique_ptr<AsyncIo> make_uring_io(int queue_depth, UringSeams seams) {
#if TRIDENT_HAVE_URING
  io_uring ring;
  const int rc = io_uring_queue_init(static_cast<unsigned>(queue_depth), &ring, 0);
  if (rc != 0)
    throw std::runtime_error(std::string("nvme tier: io_uring_queue_init refused: ") +
                             std::strerror(-rc));
  return std::make_unique<UringIo>(ring, queue_depth, std::move(seams));
#else
  (void)queue_depth;
  (void)seams;
  throw std::runtime_error(
      "nvme tier: this trident was built without io_uring (liburing was not found); "
      "install liburing-dev and rebuild, or use the thread-pool backend");
#endif
}

std::unique_ptr<AsyncIo> make_async_io(int queue_depth, IoBackend backend) {
#if TRIDENT_HAVE_URING
  if (backend != IoBackend::kThreads) {
    io_uring ring;
    const int rc = io_uring_queue_init(static_cast<unsigned>(queue_depth), &ring, 0);
    if (rc == 0) return std::make_unique<UringIo>(ring, queue_depth, UringSeams{});
    if (backend == IoBackend::kUring)
      throw std::runtime_error(std::string("nvme tier: io_uring_queue_init refused: ") +
                               std::strerror(-rc));
  }
#else
  (void)queue_depth;
  if (backend == IoBackend::kUring)
    throw std::runtime_error(
        "nvme tier: this trident was built without io_uring (liburing was not found); "
        "install liburing-dev and rebuild, or use the thread-pool backend");
#endif
  // Two threads keep a read and a write in flight at once, as the ring needs.
  return std::make_unique<ThreadIo>(2);
}

}  // namespace trident
