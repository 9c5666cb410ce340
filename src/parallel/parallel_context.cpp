// Builds the group communicators of a ParallelContext by splitting a base communicator.
#include "parallel/parallel_context.h"

#include <c10/util/Exception.h>  // TORCH_CHECK

#include <numeric>  // std::iota

#include "parallel/mpi_communicator.h"  // MpiCommunicator, for the MPI_Comm constructor

namespace trident {

namespace {

std::unique_ptr<Communicator> split(Communicator& base, const ProcessGrid& grid, GroupKind kind,
                                    int rank, double timeout_s) {
  const std::vector<int> members = grid.group_ranks(kind, rank);
  int color = Communicator::kNoGroup;
  int key = 0;
  if (!members.empty()) {
    color = members.front();
    for (size_t i = 0; i < members.size(); ++i)
      if (members[i] == rank) key = static_cast<int>(i);
  }
  return base.split(color, key, group_name(kind), timeout_s);
}

/// `comm` as a communicator whose world ranks are its own ranks, as the grid numbers them.
std::unique_ptr<Communicator> borrow(MPI_Comm comm, double timeout_s) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::vector<int> ranks(static_cast<size_t>(size));
  std::iota(ranks.begin(), ranks.end(), 0);
  return std::make_unique<MpiCommunicator>(comm, "base", std::move(ranks), timeout_s,
                                           CommOwnership::kBorrow);
}

}  // namespace

ParallelContext::ParallelContext(MPI_Comm base, int dp, int pp, int tp, double timeout_s)
    : ParallelContext(*borrow(base, timeout_s), dp, pp, tp, timeout_s) {}

ParallelContext::ParallelContext(Communicator& base, int dp, int pp, int tp, double timeout_s)
    : grid_(dp, pp, tp) {
  rank_ = base.rank();
  const int size = base.size();
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
