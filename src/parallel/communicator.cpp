// What every backend of the Communicator shares: names of the kinds of operation, the
// counters (a device communicator's include its host communicator's), and the count of
// bytes sent to other nodes.
#include "parallel/communicator.h"

#include <c10/util/Exception.h>  // TORCH_CHECK

namespace trident {

const char* comm_kind_name(CommKind kind) {
  switch (kind) {
    case CommKind::kAllReduce:
      return "all_reduce";
    case CommKind::kReduceScatter:
      return "reduce_scatter";
    case CommKind::kAllGather:
      return "all_gather";
    case CommKind::kBroadcast:
      return "broadcast";
    case CommKind::kSend:
      return "send";
    case CommKind::kRecv:
      return "recv";
    case CommKind::kBarrier:
      return "barrier";
    case CommKind::kGather:
      return "gather";
    case CommKind::kAllToAll:
      return "all_to_all";
  }
  return "?";
}

int64_t all_to_all_row_elements(const at::Tensor& output, const at::Tensor& input,
                                const std::vector<int64_t>& send_rows,
                                const std::vector<int64_t>& recv_rows, int group_size) {
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "all_to_all: dtypes differ (",
              input.scalar_type(), " sent, ", output.scalar_type(), " received)");
  TORCH_CHECK(static_cast<int>(send_rows.size()) == group_size &&
                  static_cast<int>(recv_rows.size()) == group_size,
              "all_to_all: ", send_rows.size(), " send and ", recv_rows.size(),
              " receive counts for a group of ", group_size);
  TORCH_CHECK(input.dim() >= 1 && output.dim() == input.dim(),
              "all_to_all: input and output need the same number of dimensions, at least one");
  TORCH_CHECK(input.sizes().slice(1) == output.sizes().slice(1), "all_to_all: rows of ",
              input.sizes().slice(1), " sent but rows of ", output.sizes().slice(1), " received");
  int64_t sent = 0, received = 0;
  for (int r = 0; r < group_size; ++r) {
    sent += send_rows[static_cast<size_t>(r)];
    received += recv_rows[static_cast<size_t>(r)];
  }
  TORCH_CHECK(sent == input.size(0) && received == output.size(0), "all_to_all: counts for ", sent,
              " rows sent and ", received, " received, but the tensors have ", input.size(0),
              " and ", output.size(0));
  int64_t row = 1;
  for (int64_t d : input.sizes().slice(1)) row *= d;
  return row;
}

CommCounter Communicator::counter(CommKind kind) const {
  CommCounter c = counters_[static_cast<int>(kind)];
  for (const Communicator* other : also_) {
    const CommCounter h = other->counter(kind);
    c.calls += h.calls;
    c.bytes += h.bytes;
    c.seconds += h.seconds;
    c.wait_seconds += h.wait_seconds;
  }
  return c;
}

void Communicator::reset_counters() {
  counters_ = {};
  for (Communicator* other : also_) other->reset_counters();
}

int64_t Communicator::total_bytes() const {
  int64_t total = 0;
  for (int k = 0; k < kNumCommKinds; ++k) total += counter(static_cast<CommKind>(k)).bytes;
  return total;
}

double Communicator::total_wait_seconds() const {
  double total = 0.0;
  for (int k = 0; k < kNumCommKinds; ++k) total += counter(static_cast<CommKind>(k)).wait_seconds;
  return total;
}

void Communicator::set_nodes(const std::vector<std::string>& node_of_world_rank) {
  const std::vector<int>& members = world_ranks();
  const std::string& mine = node_of_world_rank.at(static_cast<size_t>(members.at(rank())));
  off_node_.assign(members.size(), false);
  spans_nodes_ = false;
  for (size_t i = 0; i < members.size(); ++i) {
    off_node_[i] = node_of_world_rank.at(static_cast<size_t>(members[i])) != mine;
    spans_nodes_ = spans_nodes_ || off_node_[i];
  }
  for (Communicator* other : also_) other->set_nodes(node_of_world_rank);
}

int64_t Communicator::cross_node_bytes() const {
  int64_t bytes = cross_node_bytes_;
  for (const Communicator* other : also_) bytes += other->cross_node_bytes();
  return bytes;
}

int64_t Communicator::cross_node_uncounted() const {
  int64_t calls = cross_node_uncounted_;
  for (const Communicator* other : also_) calls += other->cross_node_uncounted();
  return calls;
}

void Communicator::count_collective(int64_t bytes_if_two) {
  if (!spans_nodes_) return;
  // Two ranks: every algorithm sends the peer what it lacks, once (an all-reduce the whole
  // buffer, by recursive doubling or a reduce-scatter then an all-gather of halves).
  if (size() == 2)
    count_sent(1 - rank(), bytes_if_two);
  else
    ++cross_node_uncounted_;
}

}  // namespace trident
