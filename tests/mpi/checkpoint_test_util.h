// Helpers of the multi-rank checkpoint tests: comparing two trainers' states bit for bit,
// comparing a trainer's weights with a saved checkpoint, and the communicator of the first
// ranks of the job for loading into a smaller layout.
#pragma once
#include <mpi.h>  // MPI_Comm

#include <string>  // std::string
#include <vector>  // std::vector

#include "checkpoint/index.h"           // CheckpointIndex
#include "mpi_test_util.h"              // Layout
#include "parallel/parallel_context.h"  // ParallelContext
#include "train/trainer.h"              // Trainer

namespace trident::testing {

/// Every parameter (whole where the rank holds it whole, else its ZeRO-3 shard) and
/// optimizer state of two trainers of one layout, bit for bit, and the step counts.
bool same_state(Trainer& a, Trainer& b);

/// Largest relative difference of this rank's parameter shards (gathered, in ZeRO-3) from
/// the same cut of the global tensors stored in `reference`.
double max_difference_from(Trainer& t, const ParallelContext& ctx,
                           const checkpoint::CheckpointIndex& reference);

/// The first `n` ranks of the job as a communicator (MPI_COMM_SELF when n is 1), and
/// MPI_COMM_NULL on the other ranks. Collective over the job; free with free_first_ranks.
MPI_Comm first_ranks(int n);
void free_first_ranks(MPI_Comm comm);

/// Loads the checkpoint `path`, saved after step `save_at`, into `target`'s layout on the
/// first target.world() ranks of the job, trains to step `steps`, and expects every loss
/// within `loss_tolerance` (relative) of the uninterrupted run's `losses` (indexed by
/// step - 1) and the final weights within 1e-10 of its saved `final_state`. Collective
/// over the job.
void expect_resume_matches(const Layout& target, const std::string& path, int save_at, int steps,
                           const std::vector<double>& losses,
                           const checkpoint::CheckpointIndex& final_state,
                           double loss_tolerance = 1e-10);

}  // namespace trident::testing
