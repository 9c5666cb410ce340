// ParallelContext: the process grid plus one communicator per group, made once and passed
// to everything that communicates (model layers, pipeline runtime, optimizer, checkpoints).
#pragma once
#include <c10/core/Device.h>  // at::Device

#include <memory>

#if TRIDENT_HAVE_MPI
#include <mpi.h>  // MPI_Comm, for the tests' contexts on sub-communicators
#endif

#include "parallel/communicator.h"
#include "parallel/process_grid.h"

namespace trident {

/// How the groups of a run move tensors on its device.
enum class DeviceTransport {
  kHost,        // a CPU run: the host backend (MPI, or one process)
  kNccl,        // one GPU per rank: NCCL
  kHostStaged,  // ranks sharing a GPU (which NCCL refuses): copied through the host backend
};
const char* transport_name(DeviceTransport transport);

class ParallelContext {
 public:
  /// Splits `base` (the job's world_communicator(), or a self_communicator() for a
  /// single-process reference run) into the groups of a dp × pp × tp grid, whose waits end
  /// the job after `timeout_s`. Collective over `base`, which may be dropped afterwards.
  /// On a CUDA `device` every group communicates through NCCL on it (host tensors and
  /// byte strings still through `base`'s backend), or, when two ranks of the job share a
  /// GPU, through `base`'s backend with host copies; the choice is the job's, the same on
  /// every rank.
  /// `ep` (dividing dp * cp) shares each layer's experts out among ep consecutive dp x cp
  /// ranks; `cp` splits each sequence among cp consecutive ranks (context parallelism).
  ParallelContext(Communicator& base, int dp, int pp, int tp, double timeout_s,
                  at::Device device = at::kCPU, int ep = 1, int cp = 1);
#if TRIDENT_HAVE_MPI
  /// The same over an MPI communicator (borrowed, not freed): MPI_COMM_WORLD, MPI_COMM_SELF
  /// or a sub-communicator in tests.
  ParallelContext(MPI_Comm base, int dp, int pp, int tp, double timeout_s, int ep = 1, int cp = 1);
#endif

  const ProcessGrid& grid() const { return grid_; }
  int rank() const { return rank_; }
  const GridCoord& coord() const { return coord_; }
  /// Where this rank's tensors live (train.device; for CUDA, this rank's GPU).
  at::Device device() const { return device_; }
  DeviceTransport transport() const { return transport_; }

  Communicator& world() const { return *world_; }
  Communicator& tp() const { return *tp_; }
  /// The dp x cp ranks holding the same slice of the model: gradients are summed and ZeRO
  /// states sharded over it.
  Communicator& dp() const { return *dp_; }
  /// The ranks splitting each sequence (a group of this rank alone when cp = 1).
  Communicator& cp() const { return *cp_; }
  Communicator& pp() const { return *pp_; }
  Communicator& model_parallel() const { return *mp_; }
  /// Every rank of this pipeline stage (dp x cp x tp, experts' ranks included): Muon's
  /// owners of whole matrices exchange over it.
  Communicator& stage() const { return *stage_; }
  /// Expert parallelism: the ranks sharing out the experts (a group of this rank alone
  /// when ep = 1), and the ranks holding the same experts (dp itself when ep = 1: a run
  /// without expert parallelism makes no communicator for it).
  Communicator& ep() const { return *ep_; }
  Communicator& expert_dp() const { return edp_ ? *edp_ : *dp_; }
  /// Only on the first and last pipeline stage; null elsewhere (and equal to a group of
  /// one when pp == 1).
  Communicator* embedding() const { return embedding_.get(); }

  /// Every communicator of this rank, for reporting counters.
  std::vector<Communicator*> all_groups() const;

 private:
  ProcessGrid grid_;
  int rank_ = 0;
  GridCoord coord_;
  at::Device device_;
  DeviceTransport transport_ = DeviceTransport::kHost;
  std::unique_ptr<Communicator> world_, tp_, dp_, pp_, mp_, embedding_, ep_, cp_, stage_;
  std::unique_ptr<Communicator> edp_;  // only when ep > 1
};

}  // namespace trident
