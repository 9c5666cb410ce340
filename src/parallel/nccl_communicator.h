// NcclCommunicator: the Communicator of one process group for CUDA tensors, on NCCL. Each
// operation runs on the group's own stream after the work already queued on the caller's
// compute stream (ordered by CUDA events), so communication overlaps later computation.
// Byte strings, split() and operations on host tensors go to the group's bootstrap (MPI,
// or local) communicator, whose counters this one includes.
#pragma once
#include <cuda_runtime_api.h>  // cudaStream_t
#include <nccl.h>              // ncclComm_t

#include <array>    // std::array
#include <map>      // std::map
#include <memory>   // std::unique_ptr
#include <utility>  // std::pair

#include "parallel/communicator.h"

namespace trident {

class NcclCommunicator : public Communicator {
 public:
  /// The NCCL communicator of `bootstrap`'s group on CUDA device `device`: rank 0 draws
  /// NCCL's unique id and broadcasts it over `bootstrap`. Collective over the group. Waits
  /// end the job after `timeout_s` (kWaitForever: never). Throws, naming the fix, when no
  /// GPU is visible or NCCL cannot start.
  NcclCommunicator(std::unique_ptr<Communicator> bootstrap, int device, double timeout_s);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return bootstrap_->rank(); }
  int size() const override { return bootstrap_->size(); }
  const std::string& name() const override { return bootstrap_->name(); }
  const std::vector<int>& world_ranks() const override { return bootstrap_->world_ranks(); }

  WorkHandle all_reduce(at::Tensor tensor, ReduceOp op) override;
  WorkHandle reduce_scatter(at::Tensor output, at::Tensor input, ReduceOp op) override;
  WorkHandle all_gather(at::Tensor output, at::Tensor input) override;
  WorkHandle broadcast(at::Tensor tensor, int root) override;
  /// NCCL matches point-to-point operations between two ranks by their order, not by tag,
  /// and a send waits for its receive. After open_ring_channels(), a message to or from a
  /// ring neighbour travels on a channel of its own (NCCL communicator and stream) for its
  /// direction and tag parity, which carries messages one way only, so that no send ever
  /// queues behind another operation (pipeline/rendezvous_checker.h: Channels::kPerLink).
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

  /// Opens the channels between ring neighbours (group ranks r and r + 1 mod size): for
  /// each edge, each direction and each tag parity (the pipeline's activations have even
  /// tags, its gradients odd ones) a two-rank NCCL communicator. Collective over the group.
  void open_ring_channels();

  int device() const { return device_; }
  double timeout_s() const { return timeout_s_; }
  /// Ends the group's NCCL operations in flight (after a timeout), so the job can exit.
  void abort();
  /// NCCL's asynchronous error state of the group (ncclSuccess while healthy).
  ncclResult_t async_error() const;

 private:
  /// Queues `launch` on the group's stream after the compute stream's work so far, and
  /// returns the Work that completes with it; `tensors` stay alive until then.
  WorkHandle enqueue(CommKind kind, int64_t bytes, std::vector<at::Tensor> tensors,
                     const std::function<ncclResult_t(cudaStream_t)>& launch);

  std::unique_ptr<Communicator> bootstrap_;
  int device_;
  double timeout_s_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* scratch_ = nullptr;  // one float on the device, for barrier()
  /// The channel for a message from group rank `from` to `to` with `tag`, and the peer's
  /// rank in it; null when the two are not ring neighbours or no channels are open.
  std::pair<NcclCommunicator*, int> channel(int from, int to, int tag) const;

  /// After open_ring_channels(): per neighbour's group rank, its four channels (from the
  /// lower rank even and odd, from the higher even and odd).
  std::map<int, std::array<std::unique_ptr<NcclCommunicator>, 4>> channels_;
};

}  // namespace trident
