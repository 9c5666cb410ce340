// MpiCommunicator: the Communicator of one MPI process group, for CPU tensors of
// float64, float32, bfloat16 (reduced in float32), int64 and int32.
#pragma once
#include <mpi.h>  // MPI_Comm

#include <chrono>      // std::chrono::steady_clock
#include <functional>  // std::function

#include "parallel/communicator.h"

namespace trident {

/// Whether a communicator frees its MPI_Comm when destroyed.
enum class CommOwnership { kTake, kBorrow };

class MpiCommunicator : public Communicator {
 public:
  /// Takes ownership of `comm` (freed in the destructor unless it is MPI_COMM_WORLD/SELF or
  /// borrowed). `world_ranks` are the members in group-rank order; `timeout_s` bounds
  /// every wait (kWaitForever: unbounded).
  MpiCommunicator(MPI_Comm comm, std::string name, std::vector<int> world_ranks, double timeout_s,
                  CommOwnership ownership = CommOwnership::kTake);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& name() const override { return name_; }
  const std::vector<int>& world_ranks() const override { return world_ranks_; }

  WorkHandle all_reduce(at::Tensor tensor, ReduceOp op) override;
  WorkHandle reduce_scatter(at::Tensor output, at::Tensor input, ReduceOp op) override;
  WorkHandle all_gather(at::Tensor output, at::Tensor input) override;
  WorkHandle broadcast(at::Tensor tensor, int root) override;
  WorkHandle send(at::Tensor tensor, int dst, int tag) override;
  WorkHandle recv(at::Tensor tensor, int src, int tag) override;
  WorkHandle barrier() override;
  WorkHandle all_to_all(at::Tensor output, at::Tensor input, const std::vector<int64_t>& send_rows,
                        const std::vector<int64_t>& recv_rows) override;

  std::string broadcast_bytes(std::string bytes, int root) override;
  std::vector<std::string> gather_bytes(const std::string& bytes, int root) override;
  std::vector<std::string> all_gather_bytes(const std::string& bytes) override;
  std::unique_ptr<Communicator> split(int color, int key, const std::string& name,
                                      double timeout_s) override;

  MPI_Comm comm() const { return comm_; }
  double timeout_s() const { return timeout_s_; }

  /// The clock the time counters (CommCounter::seconds, wait_seconds) read: the steady
  /// clock unless a test sets its own. The timeout's deadline always reads the steady clock.
  using Clock = std::chrono::steady_clock;
  void set_counter_clock(std::function<Clock::time_point()> clock) {
    counter_clock_ = std::move(clock);
  }
  Clock::time_point counter_now() const { return counter_clock_ ? counter_clock_() : Clock::now(); }

 private:
  /// gather_bytes to `root`, or, with kEveryRank, all_gather_bytes: one implementation.
  static constexpr int kEveryRank = -1;
  std::vector<std::string> gather_bytes_to(const std::string& bytes, int root);

  MPI_Comm comm_;
  MPI_Comm ring_comm_;  // a duplicate for collectives built from point-to-point messages,
                        // so that they never match the group's own sends and receives
  std::string name_;
  std::vector<int> world_ranks_;
  double timeout_s_;
  bool owned_;
  int rank_ = 0;
  int size_ = 1;
  /// Tags of the point-to-point messages of collectives built from them (MPI guarantees
  /// tags up to 32767), taken in turn: every rank posts a group's collectives in the
  /// same order.
  static constexpr int kMaxTag = 32768;
  int next_tag_ = 0;
  std::function<Clock::time_point()> counter_clock_;
};

}  // namespace trident
