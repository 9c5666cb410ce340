// HostStagedCommunicator: a group's communicator for device tensors over a host backend
// (MPI): each operation copies its device tensors to host memory, runs there, and copies
// the result back when it completes. For ranks that share a GPU, which NCCL refuses (it
// takes one rank per device); slower than NCCL, but the same numbers.
#pragma once
#include <memory>  // std::unique_ptr

#include "parallel/communicator.h"

namespace trident {

class HostStagedCommunicator : public Communicator {
 public:
  /// Communicates through `host` (whose counters this one includes).
  explicit HostStagedCommunicator(std::unique_ptr<Communicator> host);

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  const std::string& name() const override { return host_->name(); }
  const std::vector<int>& world_ranks() const override { return host_->world_ranks(); }

  WorkHandle all_reduce(at::Tensor tensor, ReduceOp op) override;
  WorkHandle reduce_scatter(at::Tensor output, at::Tensor input, ReduceOp op) override;
  WorkHandle all_gather(at::Tensor output, at::Tensor input) override;
  WorkHandle broadcast(at::Tensor tensor, int root) override;
  WorkHandle send(at::Tensor tensor, int dst, int tag) override;
  WorkHandle recv(at::Tensor tensor, int src, int tag) override;
  WorkHandle barrier() override { return host_->barrier(); }
  WorkHandle all_to_all(at::Tensor output, at::Tensor input, const std::vector<int64_t>& send_rows,
                        const std::vector<int64_t>& recv_rows) override;

  std::string broadcast_bytes(std::string bytes, int root) override;
  std::vector<std::string> gather_bytes(const std::string& bytes, int root) override;
  std::vector<std::string> all_gather_bytes(const std::string& bytes) override;
  std::unique_ptr<Communicator> split(int color, int key, const std::string& name,
                                      double timeout_s) override;

 private:
  std::unique_ptr<Communicator> host_;
};

}  // namespace trident
