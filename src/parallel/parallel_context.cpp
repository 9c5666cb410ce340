// Builds the group communicators of a ParallelContext with MPI_Comm_split.
#include "parallel/parallel_context.h"

#include <c10/util/Exception.h>  // TORCH_CHECK

#include "parallel/mpi_communicator.h"

namespace trident {

namespace {

std::unique_ptr<Communicator> split(MPI_Comm base, const ProcessGrid& grid, GroupKind kind,
                                    int rank, double timeout_s) {
  const std::vector<int> members = grid.group_ranks(kind, rank);
  int color = MPI_UNDEFINED;
  int key = 0;
  if (!members.empty()) {
    color = members.front();
    for (size_t i = 0; i < members.size(); ++i)
      if (members[i] == rank) key = static_cast<int>(i);
  }
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(base, color, key, &comm);
  if (comm == MPI_COMM_NULL) return nullptr;
  return std::make_unique<MpiCommunicator>(comm, group_name(kind), members, timeout_s);
}

}  // namespace

ParallelContext::ParallelContext(MPI_Comm base, int dp, int pp, int tp, double timeout_s)
    : grid_(dp, pp, tp) {
  int size = 0;
  MPI_Comm_rank(base, &rank_);
  MPI_Comm_size(base, &size);
  TORCH_CHECK(size == grid_.world_size(), "the job has ", size, " ranks but dp*pp*tp = ", dp, "*",
              pp, "*", tp, " = ", grid_.world_size(), "; launch with mpirun -np ",
              grid_.world_size(), " or change parallel.dp/pp/tp");
  coord_ = grid_.coord_of(rank_);
  world_ = split(base, grid_, GroupKind::kWorld, rank_, timeout_s);
  tp_ = split(base, grid_, GroupKind::kTp, rank_, timeout_s);
  dp_ = split(base, grid_, GroupKind::kDp, rank_, timeout_s);
  pp_ = split(base, grid_, GroupKind::kPp, rank_, timeout_s);
  mp_ = split(base, grid_, GroupKind::kModelParallel, rank_, timeout_s);
  embedding_ = split(base, grid_, GroupKind::kEmbedding, rank_, timeout_s);
}

std::vector<Communicator*> ParallelContext::all_groups() const {
  std::vector<Communicator*> groups{world_.get(), tp_.get(), dp_.get(), pp_.get(), mp_.get()};
  if (embedding_) groups.push_back(embedding_.get());
  return groups;
}

}  // namespace trident
