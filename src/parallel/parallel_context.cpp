// Builds the group communicators of a ParallelContext by splitting a base communicator.
#include "parallel/parallel_context.h"

#include <c10/util/Exception.h>  // TORCH_CHECK
#include <unistd.h>              // gethostname

#include <numeric>  // std::iota
#include <set>      // std::set

#include "parallel/host_staged_communicator.h"  // HostStagedCommunicator
#include "parallel/local_communicator.h"        // LocalCommunicator
#include "parallel/nccl_backend.h"              // make_nccl_communicator

#if TRIDENT_HAVE_MPI
#include "parallel/mpi_communicator.h"  // MpiCommunicator, for the MPI_Comm constructor
#endif

namespace trident {

namespace {

/// Whether two ranks of `base`'s job use the same GPU (the same PCI device on one host,
/// whatever CUDA_VISIBLE_DEVICES numbers it). Collective over `base`.
bool gpu_shared(Communicator& base, at::Device device) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::vector<std::string> all =
      base.all_gather_bytes(std::string(host) + "/" + gpu_identity(device.index()));
  return std::set<std::string>(all.begin(), all.end()).size() < all.size();
}

std::unique_ptr<Communicator> split(Communicator& base, const ProcessGrid& grid, GroupKind kind,
                                    int rank, double timeout_s, at::Device device,
                                    DeviceTransport transport) {
  const std::vector<int> members = grid.group_ranks(kind, rank);
  int color = Communicator::kNoGroup;
  int key = 0;
  if (!members.empty()) {
    color = members.front();
    for (size_t i = 0; i < members.size(); ++i)
      if (members[i] == rank) key = static_cast<int>(i);
  }
  std::unique_ptr<Communicator> group = base.split(color, key, group_name(kind), timeout_s);
  // Every member makes the groups in the same order, so NCCL's start-up (collective over
  // the group) meets the same group on every rank.
  // The pipeline's messages on one-way channels per neighbour and kind, so that no schedule
  // deadlocks where a send waits for its receive (pipeline/rendezvous_checker.h).
  if (group && transport == DeviceTransport::kNccl) {
    const bool ring_channels = kind == GroupKind::kPp && group->size() > 1;
    return make_nccl_communicator(std::move(group), device.index(), timeout_s, ring_channels);
  }
  if (group && transport == DeviceTransport::kHostStaged)
    return std::make_unique<HostStagedCommunicator>(std::move(group));
  return group;
}

#if TRIDENT_HAVE_MPI

/// `comm` as a communicator whose world ranks are its own ranks, as the grid numbers them.
std::unique_ptr<Communicator> borrow(MPI_Comm comm, double timeout_s) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::vector<int> ranks(static_cast<size_t>(size));
  std::iota(ranks.begin(), ranks.end(), 0);
  return std::make_unique<MpiCommunicator>(comm, "base", std::move(ranks), timeout_s,
                                           CommOwnership::kBorrow);
}

#endif

}  // namespace

const char* transport_name(DeviceTransport transport) {
  switch (transport) {
    case DeviceTransport::kHost:
      return "host";
    case DeviceTransport::kNccl:
      return "NCCL";
    case DeviceTransport::kHostStaged:
      return "host-staged (ranks share a GPU)";
  }
  return "?";
}

#if TRIDENT_HAVE_MPI
ParallelContext::ParallelContext(MPI_Comm base, int dp, int pp, int tp, double timeout_s, int ep,
                                 int cp)
    : ParallelContext(*borrow(base, timeout_s), dp, pp, tp, timeout_s, at::kCPU, ep, cp) {}
#endif

ParallelContext::ParallelContext(Communicator& base, int dp, int pp, int tp, double timeout_s,
                                 at::Device device, int ep, int cp)
    : grid_(dp, pp, tp, ep, cp), device_(device) {
  rank_ = base.rank();
  const int size = base.size();
  TORCH_CHECK(size == grid_.world_size(), "the job has ", size, " ranks but dp*cp*pp*tp = ", dp,
              "*", cp, "*", pp, "*", tp, " = ", grid_.world_size(), "; launch with mpirun -np ",
              grid_.world_size(), " or change parallel.dp/cp/pp/tp");
  coord_ = grid_.coord_of(rank_);
  if (device.is_cuda())
    transport_ = gpu_shared(base, device) ? DeviceTransport::kHostStaged : DeviceTransport::kNccl;
  world_ = split(base, grid_, GroupKind::kWorld, rank_, timeout_s, device, transport_);
  tp_ = split(base, grid_, GroupKind::kTp, rank_, timeout_s, device, transport_);
  dp_ = split(base, grid_, GroupKind::kDp, rank_, timeout_s, device, transport_);
  pp_ = split(base, grid_, GroupKind::kPp, rank_, timeout_s, device, transport_);
  mp_ = split(base, grid_, GroupKind::kModelParallel, rank_, timeout_s, device, transport_);
  embedding_ = split(base, grid_, GroupKind::kEmbedding, rank_, timeout_s, device, transport_);
  stage_ = split(base, grid_, GroupKind::kStage, rank_, timeout_s, device, transport_);
  if (grid_.ep() > 1) {
    ep_ = split(base, grid_, GroupKind::kEp, rank_, timeout_s, device, transport_);
    edp_ = split(base, grid_, GroupKind::kExpertDp, rank_, timeout_s, device, transport_);
  } else {  // no device communicator (NCCL's cost memory) for groups nothing uses
    ep_ = std::make_unique<LocalCommunicator>(group_name(GroupKind::kEp), rank_);
  }
  if (grid_.cp() > 1)
    cp_ = split(base, grid_, GroupKind::kCp, rank_, timeout_s, device, transport_);
  else
    cp_ = std::make_unique<LocalCommunicator>(group_name(GroupKind::kCp), rank_);
}

std::vector<Communicator*> ParallelContext::all_groups() const {
  std::vector<Communicator*> groups{world_.get(), tp_.get(), dp_.get(),
                                    pp_.get(),    mp_.get(), stage_.get()};
  if (embedding_) groups.push_back(embedding_.get());
  groups.push_back(ep_.get());
  if (edp_) groups.push_back(edp_.get());
  groups.push_back(cp_.get());
  return groups;
}

}  // namespace trident
