// ParallelContext: the process grid plus one communicator per group, made once and passed
// to everything that communicates (model layers, pipeline runtime, optimizer, checkpoints).
#pragma once
#include <mpi.h>  // MPI_Comm, for the tests' contexts on sub-communicators

#include <memory>

#include "parallel/communicator.h"
#include "parallel/process_grid.h"

namespace trident {

class ParallelContext {
 public:
  /// Splits `base` (the job's world_communicator(), or a self_communicator() for a
  /// single-process reference run) into the groups of a dp × pp × tp grid, whose waits end
  /// the job after `timeout_s`. Collective over `base`, which may be dropped afterwards.
  ParallelContext(Communicator& base, int dp, int pp, int tp, double timeout_s);
  /// The same over an MPI communicator (borrowed, not freed): MPI_COMM_WORLD, MPI_COMM_SELF
  /// or a sub-communicator in tests.
  ParallelContext(MPI_Comm base, int dp, int pp, int tp, double timeout_s);

  const ProcessGrid& grid() const { return grid_; }
  int rank() const { return rank_; }
  const GridCoord& coord() const { return coord_; }

  Communicator& world() const { return *world_; }
  Communicator& tp() const { return *tp_; }
  Communicator& dp() const { return *dp_; }
  Communicator& pp() const { return *pp_; }
  Communicator& model_parallel() const { return *mp_; }
  /// Only on the first and last pipeline stage; null elsewhere (and equal to a group of
  /// one when pp == 1).
  Communicator* embedding() const { return embedding_.get(); }

  bool is_first_stage() const { return coord_.pp == 0; }
  bool is_last_stage() const { return coord_.pp == grid_.pp() - 1; }

  /// Every communicator of this rank, for reporting counters.
  std::vector<Communicator*> all_groups() const;

 private:
  ProcessGrid grid_;
  int rank_ = 0;
  GridCoord coord_;
  std::unique_ptr<Communicator> world_, tp_, dp_, pp_, mp_, embedding_;
};

}  // namespace trident
