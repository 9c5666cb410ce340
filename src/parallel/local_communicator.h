// LocalCommunicator: the Communicator of a group of one process, for a build without MPI
// (a single-process run, such as on a GPU node that has no MPI library). Collectives over
// one rank leave their tensors as they are (or copy input to output), a send to this rank
// is kept until the matching receive, and everything is counted as the MPI backend counts.
#pragma once
#include <map>  // std::map

#include "parallel/communicator.h"

namespace trident {

class LocalCommunicator : public Communicator {
 public:
  /// The group of world rank `world_rank` alone, named `name`.
  LocalCommunicator(std::string name, int world_rank);

  int rank() const override { return 0; }
  int size() const override { return 1; }
  const std::string& name() const override { return name_; }
  const std::vector<int>& world_ranks() const override { return world_ranks_; }

  WorkHandle all_reduce(at::Tensor tensor, ReduceOp op) override;
  WorkHandle reduce_scatter(at::Tensor output, at::Tensor input, ReduceOp op) override;
  WorkHandle all_gather(at::Tensor output, at::Tensor input) override;
  WorkHandle broadcast(at::Tensor tensor, int root) override;
  /// A message to this rank itself, received by the recv with the same tag.
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

 private:
  /// Counts one call of `kind` moving `bytes` and returns its (complete) Work.
  WorkHandle done(CommKind kind, int64_t bytes);
  void check_peer(int peer, const char* what) const;

  std::string name_;
  std::vector<int> world_ranks_;
  std::multimap<int, at::Tensor> mailbox_;  // sent to this rank, by tag, not yet received
};

}  // namespace trident
