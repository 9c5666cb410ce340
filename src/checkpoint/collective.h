// The few MPI exchanges of checkpointing, on strings: the communicator under a
// ParallelContext's world group, broadcasting a string, and gathering one per rank.
#pragma once
#include <mpi.h>  // MPI_Comm, MPI_Bcast, MPI_Gather(v)

#include <string>  // std::string
#include <vector>  // std::vector

#include "parallel/mpi_communicator.h"  // MpiCommunicator
#include "parallel/parallel_context.h"  // ParallelContext

namespace trident::checkpoint {

/// The MPI communicator of `ctx`'s world group (MPI_COMM_WORLD, a sub-communicator in
/// tests, or MPI_COMM_SELF).
inline MPI_Comm world_comm(const ParallelContext& ctx) {
  auto* mpi = dynamic_cast<MpiCommunicator*>(&ctx.world());
  TORCH_CHECK(mpi != nullptr, "checkpointing needs the world group on MPI");
  return mpi->comm();
}

inline int comm_rank(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

inline int comm_size(MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  return size;
}

/// `text` of rank `root`, on every rank.
inline std::string broadcast_string(MPI_Comm comm, std::string text, int root) {
  long long length = static_cast<long long>(text.size());
  MPI_Bcast(&length, 1, MPI_LONG_LONG, root, comm);
  text.resize(static_cast<size_t>(length));
  MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, root, comm);
  return text;
}

/// Every rank's `text`, in rank order, on `root` (empty elsewhere).
inline std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& text, int root) {
  const int size = comm_size(comm), rank = comm_rank(comm);
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, comm);
  std::string all;
  if (rank == root) {
    int total = 0;
    for (int r = 0; r < size; ++r) {
      displs[r] = total;
      total += lengths[r];
    }
    all.resize(static_cast<size_t>(total));
  }
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), displs.data(), MPI_CHAR,
              root, comm);
  std::vector<std::string> out;
  if (rank == root)
    for (int r = 0; r < size; ++r) out.push_back(all.substr(displs[r], lengths[r]));
  return out;
}

}  // namespace trident::checkpoint
