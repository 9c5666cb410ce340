// The job's start-up queries on MPI_COMM_WORLD; safe to call before MPI starts (one rank).
#include "parallel/world.h"

#include <mpi.h>  // MPI_COMM_WORLD, MPI_Comm_split_type, MPI_Abort

#include <numeric>  // std::iota
#include <string>   // std::string
#include <utility>  // std::pair
#include <vector>   // std::vector

#include "parallel/agreement.h"         // JobError
#include "parallel/mpi_communicator.h"  // MpiCommunicator
#include "parallel/thread_level.h"      // ThreadLevel, thread_level_shortfall

namespace trident {

namespace {

bool mpi_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

}  // namespace

int world_rank() {
  if (!mpi_running()) return 0;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  if (!mpi_running()) return 1;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

bool multi_process_built() { return true; }

void start_job(int* argc, char*** argv) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  // The lowest level any rank was given (MPI's levels are ordered), so that all stop alike.
  int lowest = provided;
  MPI_Allreduce(&provided, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  const ThreadLevel level = lowest >= MPI_THREAD_MULTIPLE     ? ThreadLevel::kMultiple
                            : lowest >= MPI_THREAD_SERIALIZED ? ThreadLevel::kSerialized
                            : lowest >= MPI_THREAD_FUNNELED   ? ThreadLevel::kFunneled
                                                              : ThreadLevel::kSingle;
  const std::string shortfall = thread_level_shortfall(level);
  if (!shortfall.empty()) throw JobError(shortfall);
}

void end_job() {
  if (mpi_running()) MPI_Finalize();
}

namespace {

/// This rank's (index, count) among the ranks of its node.
std::pair<int, int> node_local() {
  if (!mpi_running()) return {0, 1};
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int index = 0, count = 1;
  MPI_Comm_rank(local, &index);
  MPI_Comm_size(local, &count);
  MPI_Comm_free(&local);
  return {index, count};
}

}  // namespace

int ranks_per_node() { return node_local().second; }

int local_rank() { return node_local().first; }

void abort_job(int code) {
  if (mpi_running() && world_size() > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

std::unique_ptr<Communicator> world_communicator(double timeout_s) {
  std::vector<int> ranks(static_cast<size_t>(world_size()));
  std::iota(ranks.begin(), ranks.end(), 0);
  return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, "world", std::move(ranks), timeout_s);
}

std::unique_ptr<Communicator> self_communicator(double timeout_s) {
  return std::make_unique<MpiCommunicator>(MPI_COMM_SELF, "self", std::vector<int>{world_rank()},
                                           timeout_s);
}

std::unique_ptr<Communicator> node_communicator(double timeout_s) {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int size = 1;
  MPI_Comm_size(node, &size);
  int me = world_rank();
  std::vector<int> ranks(static_cast<size_t>(size));
  MPI_Allgather(&me, 1, MPI_INT, ranks.data(), 1, MPI_INT, node);
  return std::make_unique<MpiCommunicator>(node, "node", std::move(ranks), timeout_s);
}

}  // namespace trident
