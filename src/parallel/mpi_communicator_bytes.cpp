// MPI backend of the Communicator's byte-string operations and of splitting a group: each
// string operation is two rounds of one MpiWork (the lengths, then the bytes), so that it
// is counted and bounded by the group's timeout like the tensor operations.
#include <c10/util/Exception.h>  // TORCH_CHECK

#include <algorithm>  // std::min
#include <climits>    // INT_MAX
#include <memory>     // std::make_shared, std::make_unique
#include <stdexcept>  // std::length_error

#include "parallel/mpi_communicator.h"
#include "parallel/mpi_work.h"  // MpiWork, Blocked

namespace trident {

namespace {

using mpi_detail::Blocked;
using mpi_detail::MpiWork;

/// MPI counts are ints: a buffer longer than this travels in several messages.
constexpr int64_t kChunk = int64_t{1} << 30;

/// Where each rank's bytes start in the gathered buffer, checked to fit MPI's int counts
/// (every rank knows every length, so that all throw together).
std::vector<int> displacements(const std::vector<int64_t>& lengths, const std::string& group,
                               const char* what) {
  std::vector<int> displs(lengths.size());
  int64_t total = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    if (total + lengths[r] > INT_MAX)
      throw std::length_error(std::string(what) + " on group '" + group + "': more than " +
                              std::to_string(INT_MAX) + " bytes in total");
    displs[r] = static_cast<int>(total);
    total += lengths[r];
  }
  return displs;
}

/// The strings of a gathered buffer.
std::vector<std::string> split_buffer(const std::string& all, const std::vector<int64_t>& lengths,
                                      const std::vector<int>& displs) {
  std::vector<std::string> out;
  out.reserve(lengths.size());
  for (size_t r = 0; r < lengths.size(); ++r)
    out.push_back(all.substr(static_cast<size_t>(displs[r]), static_cast<size_t>(lengths[r])));
  return out;
}

}  // namespace

std::string MpiCommunicator::broadcast_bytes(std::string bytes, int root) {
  auto& counter = counters_[static_cast<int>(CommKind::kBroadcast)];
  auto data = std::make_shared<std::string>(std::move(bytes));
  auto length = std::make_shared<int64_t>(static_cast<int64_t>(data->size()));
  std::shared_ptr<MpiWork> work;
  {
    Blocked blocked(*this, counter);
    work = std::make_shared<MpiWork>(*this, counter, CommKind::kBroadcast, 0,
                                     std::vector<at::Tensor>{});
    MPI_Ibcast(length.get(), 1, MPI_INT64_T, root, comm_, work->request());
    MpiWork* w = work.get();
    MPI_Comm comm = comm_;
    work->on_round([=, round = 0]() mutable {
      if (round++ > 0) return true;
      data->resize(static_cast<size_t>(*length));
      w->add_bytes(*length);
      for (int64_t at = 0; at < *length; at += kChunk)
        MPI_Ibcast(data->data() + at, static_cast<int>(std::min(kChunk, *length - at)), MPI_CHAR,
                   root, comm, w->request());
      return false;
    });
  }
  work->wait();
  return std::move(*data);
}

std::vector<std::string> MpiCommunicator::gather_bytes(const std::string& bytes, int root) {
  return gather_bytes_to(bytes, root);
}

std::vector<std::string> MpiCommunicator::all_gather_bytes(const std::string& bytes) {
  return gather_bytes_to(bytes, kEveryRank);
}

std::vector<std::string> MpiCommunicator::gather_bytes_to(const std::string& bytes, int root) {
  const bool everyone = root == kEveryRank;
  const CommKind kind = everyone ? CommKind::kAllGather : CommKind::kGather;
  auto& counter = counters_[static_cast<int>(kind)];
  auto lengths = std::make_shared<std::vector<int64_t>>(static_cast<size_t>(size_));
  auto mine = std::make_shared<int64_t>(static_cast<int64_t>(bytes.size()));
  auto all = std::make_shared<std::string>();
  // A non-blocking gatherv reads its counts and displacements until it completes.
  auto counts = std::make_shared<std::vector<int>>();
  auto displs = std::make_shared<std::vector<int>>();
  std::shared_ptr<MpiWork> work;
  {
    Blocked blocked(*this, counter);
    work = std::make_shared<MpiWork>(*this, counter, kind, 0, std::vector<at::Tensor>{});
    // Every rank learns every length, so that all agree on whether the gather fits.
    MPI_Iallgather(mine.get(), 1, MPI_INT64_T, lengths->data(), 1, MPI_INT64_T, comm_,
                   work->request());
    MpiWork* w = work.get();
    MPI_Comm comm = comm_;
    const bool receives = everyone || rank_ == root;
    const std::string name = name_;
    work->on_round([=, &bytes, round = 0]() mutable {
      if (round++ > 0) return true;
      *displs = displacements(*lengths, name, everyone ? "all_gather_bytes" : "gather_bytes");
      int64_t total = 0;
      for (int64_t n : *lengths) total += n;
      w->add_bytes(receives ? total : *mine);
      if (receives) all->resize(static_cast<size_t>(total));
      counts->assign(lengths->begin(), lengths->end());
      if (everyone)
        MPI_Iallgatherv(bytes.data(), static_cast<int>(*mine), MPI_CHAR, all->data(),
                        counts->data(), displs->data(), MPI_CHAR, comm, w->request());
      else
        MPI_Igatherv(bytes.data(), static_cast<int>(*mine), MPI_CHAR, all->data(), counts->data(),
                     displs->data(), MPI_CHAR, root, comm, w->request());
      return false;
    });
  }
  work->wait();
  if (!everyone && rank_ != root) return {};
  return split_buffer(*all, *lengths, *displs);
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key, const std::string& name,
                                                     double timeout_s) {
  TORCH_CHECK(color >= 0 || color == kNoGroup, "split of group '", name_, "': color ", color,
              " must be at least 0, or kNoGroup");
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(comm_, color == kNoGroup ? MPI_UNDEFINED : color, key, &comm);
  if (comm == MPI_COMM_NULL) return nullptr;
  // The members' world ranks, as this group knows them, in the new group's order.
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::vector<int> members(static_cast<size_t>(size));
  int me = world_ranks_[static_cast<size_t>(rank_)];
  MPI_Allgather(&me, 1, MPI_INT, members.data(), 1, MPI_INT, comm);
  return std::make_unique<MpiCommunicator>(comm, name, std::move(members), timeout_s);
}

}  // namespace trident
