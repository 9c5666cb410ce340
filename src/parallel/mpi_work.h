// MpiWork: the Work handle of the MPI backend (requests in rounds, counters, completion
// callbacks, the timeout that ends the job), shared by the files that implement
// MpiCommunicator; not for use outside src/parallel/.
#pragma once
#include <mpi.h>    // MPI_Request, MPI_Testall, MPI_Abort
#include <sched.h>  // sched_yield

#include <chrono>      // std::chrono::steady_clock
#include <cmath>       // std::isfinite
#include <cstdio>      // std::fprintf
#include <cstdlib>     // std::abort
#include <functional>  // std::function
#include <sstream>     // std::ostringstream
#include <thread>      // std::this_thread::sleep_for
#include <vector>      // std::vector

#include "parallel/mpi_communicator.h"  // MpiCommunicator

namespace trident::mpi_detail {

using Clock = std::chrono::steady_clock;

class MpiWork : public Work {
 public:
  MpiWork(const MpiCommunicator& comm, CommCounter& counter, CommKind kind, int64_t bytes,
          std::vector<at::Tensor> keep_alive)
      : comm_(comm),
        counter_(counter),
        kind_(kind),
        bytes_(bytes),
        keep_alive_(std::move(keep_alive)),
        start_(comm.counter_now()),
        deadline_from_(Clock::now()) {
    counter_.calls += 1;
    counter_.bytes += bytes;
  }

  /// A request of the operation's current round; the round ends when all have completed.
  MPI_Request* request() {
    requests_.push_back(MPI_REQUEST_NULL);
    return &requests_.back();
  }
  void on_complete(std::function<void()> fn) { finish_ = std::move(fn); }
  /// Counts payload learnt only once the operation runs (a received string's length).
  void add_bytes(int64_t bytes) {
    bytes_ += bytes;
    counter_.bytes += bytes;
  }
  /// For operations of several rounds: called when a round's requests have completed;
  /// posts the next round's requests and returns false, or returns true when done.
  void on_round(std::function<bool()> fn) { next_round_ = std::move(fn); }

  bool test() override {
    if (done_) return true;
    const auto from = comm_.counter_now();
    const bool finished = progress();
    counter_.wait_seconds += std::chrono::duration<double>(comm_.counter_now() - from).count();
    return finished;
  }

  void wait() override {
    if (done_) return;
    const auto blocked_from = comm_.counter_now();
    // An infinite timeout (kWaitForever) has no deadline.
    const bool bounded = std::isfinite(comm_.timeout_s());
    const auto deadline =
        bounded ? deadline_from_ + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(comm_.timeout_s()))
                : Clock::time_point::max();
    int spins = 0;
    while (!progress()) {
      if (++spins < 64) {
        sched_yield();
        continue;
      }
      if (bounded && Clock::now() > deadline) abort_on_timeout();
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    counter_.wait_seconds +=
        std::chrono::duration<double>(comm_.counter_now() - blocked_from).count();
  }

 private:
  /// Drives MPI and the next round; true once the operation has completed.
  bool progress() {
    if (done_) return true;
    int flag = 0;
    MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &flag, MPI_STATUSES_IGNORE);
    if (!flag) return false;
    requests_.clear();
    if (!next_round_ || next_round_()) complete();
    return done_;
  }

  void complete() {
    done_ = true;
    if (finish_) finish_();
    keep_alive_.clear();
    next_round_ = nullptr;
    counter_.seconds += std::chrono::duration<double>(comm_.counter_now() - start_).count();
  }

  [[noreturn]] void abort_on_timeout() {
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    std::ostringstream ranks;
    for (size_t i = 0; i < comm_.world_ranks().size(); ++i)
      ranks << (i ? "," : "") << comm_.world_ranks()[i];
    std::fprintf(stderr,
                 "trident: error: rank %d: %s of %lld bytes on group '%s' (ranks %s) did not "
                 "complete within %.1f s; another rank of the group failed or is waiting "
                 "elsewhere (raise parallel.timeout_s if a step is legitimately this slow)\n",
                 world_rank, comm_kind_name(kind_), static_cast<long long>(bytes_),
                 comm_.name().c_str(), ranks.str().c_str(), comm_.timeout_s());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    std::abort();
  }

  const MpiCommunicator& comm_;
  CommCounter& counter_;
  CommKind kind_;
  int64_t bytes_;
  std::vector<at::Tensor> keep_alive_;
  Clock::time_point start_;          // on the counters' clock
  Clock::time_point deadline_from_;  // on the steady clock
  std::vector<MPI_Request> requests_;
  std::function<bool()> next_round_;
  std::function<void()> finish_;
  bool done_ = false;
};

inline int64_t nbytes(const at::Tensor& t) {
  return t.numel() * static_cast<int64_t>(t.element_size());
}

/// Adds its scope's seconds to a counter's blocked time: posting an operation (dtype
/// conversions, the MPI call, which may move much of the data at once) is time the caller
/// spends communicating rather than computing.
class Blocked {
 public:
  Blocked(const MpiCommunicator& comm, CommCounter& counter)
      : comm_(comm), counter_(counter), from_(comm.counter_now()) {}
  ~Blocked() {
    counter_.wait_seconds += std::chrono::duration<double>(comm_.counter_now() - from_).count();
  }
  Blocked(const Blocked&) = delete;
  Blocked& operator=(const Blocked&) = delete;

 private:
  const MpiCommunicator& comm_;
  CommCounter& counter_;
  Clock::time_point from_;
};

}  // namespace trident::mpi_detail
