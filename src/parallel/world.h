// The job as a whole, for the program's start-up and its commands: this process's rank,
// the number of ranks, the ranks sharing its node, ending the job, and communicators over
// every rank or this one alone. MPI stays behind this header (world.cpp); a build without
// MPI has one process, and world_local.cpp answers for it.
#pragma once
#include <memory>  // std::unique_ptr

#include "parallel/communicator.h"  // Communicator, kWaitForever

namespace trident {

/// This process's rank in the job (0 outside an MPI launch, or before MPI starts).
int world_rank();
/// The job's number of ranks (1 outside an MPI launch, or before MPI starts).
int world_size();
/// Whether this build can run several ranks (it has MPI).
bool multi_process_built();
/// Starts the job's communication (MPI_Init_thread asking for full thread support), for the
/// commands that communicate; end_job() ends it. Nothing without MPI. Throws a JobError on
/// every rank when some rank's library gives less thread support than trident needs
/// (parallel/thread_level.h).
void start_job(int* argc, char*** argv);
void end_job();
/// The ranks of the job on this rank's node (sharing its memory), this one included.
/// Collective over the job.
int ranks_per_node();
/// This rank's index among the ranks of its node, from 0. Collective over the job.
int local_rank();
/// From any one rank: when the job has other ranks, ends them all, this one included, with
/// exit code `code`; alone, returns (so that the caller exits normally, with that code).
void abort_job(int code);

/// A communicator over every rank of the job, named "world", whose waits end the job after
/// `timeout_s` (none by default: start-up agreement may wait on a slow rank).
std::unique_ptr<Communicator> world_communicator(double timeout_s = kWaitForever);
/// A communicator over this rank alone, named "self".
std::unique_ptr<Communicator> self_communicator(double timeout_s = kWaitForever);
/// A communicator over the ranks of this rank's node (those ranks_per_node counts), named
/// "node", in the order of their world ranks. Collective over the job.
std::unique_ptr<Communicator> node_communicator(double timeout_s = kWaitForever);

}  // namespace trident
