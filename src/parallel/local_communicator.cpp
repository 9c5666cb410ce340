// The Communicator of one process: each operation completes when it is posted.
#include "parallel/local_communicator.h"

#include <c10/util/Exception.h>  // TORCH_CHECK

namespace trident {

namespace {

class DoneWork : public Work {
 public:
  void wait() override {}
  bool test() override { return true; }
};

int64_t nbytes(const at::Tensor& t) { return static_cast<int64_t>(t.numel() * t.element_size()); }

void check_tensor(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.defined(), "communicator: ", what, " tensor is undefined");
  TORCH_CHECK(t.is_contiguous(), "communicator: ", what, " tensor must be contiguous");
}

}  // namespace

LocalCommunicator::LocalCommunicator(std::string name, int world_rank)
    : name_(std::move(name)), world_ranks_{world_rank} {}

WorkHandle LocalCommunicator::done(CommKind kind, int64_t bytes) {
  CommCounter& c = counters_[static_cast<int>(kind)];
  c.calls += 1;
  c.bytes += bytes;
  return std::make_shared<DoneWork>();
}

void LocalCommunicator::check_peer(int peer, const char* what) const {
  TORCH_CHECK(peer == 0, what, " on group '", name_, "' names rank ", peer,
              ", but the group is this rank alone");
}

WorkHandle LocalCommunicator::all_reduce(at::Tensor tensor, ReduceOp /*op*/) {
  check_tensor(tensor, "all_reduce");
  return done(CommKind::kAllReduce, nbytes(tensor));  // sum, mean and max of one are itself
}

WorkHandle LocalCommunicator::reduce_scatter(at::Tensor output, at::Tensor input, ReduceOp /*op*/) {
  check_tensor(output, "reduce_scatter output");
  check_tensor(input, "reduce_scatter input");
  TORCH_CHECK(input.numel() == output.numel(), "reduce_scatter on group '", name_, "': input has ",
              input.numel(), " elements, expected ", output.numel());
  if (!output.is_same(input)) output.copy_(input.view_as(output));
  return done(CommKind::kReduceScatter, nbytes(input));
}

WorkHandle LocalCommunicator::all_gather(at::Tensor output, at::Tensor input) {
  check_tensor(output, "all_gather output");
  check_tensor(input, "all_gather input");
  TORCH_CHECK(output.numel() == input.numel(), "all_gather on group '", name_, "': output has ",
              output.numel(), " elements, expected ", input.numel());
  if (!output.is_same(input)) output.view_as(input).copy_(input);
  return done(CommKind::kAllGather, nbytes(output));
}

WorkHandle LocalCommunicator::all_to_all(at::Tensor output, at::Tensor input,
                                         const std::vector<int64_t>& send_rows,
                                         const std::vector<int64_t>& recv_rows) {
  check_tensor(output, "all_to_all output");
  check_tensor(input, "all_to_all input");
  all_to_all_row_elements(output, input, send_rows, recv_rows, 1);
  if (!output.is_same(input)) output.copy_(input);
  return done(CommKind::kAllToAll, nbytes(input));
}

WorkHandle LocalCommunicator::broadcast(at::Tensor tensor, int root) {
  check_tensor(tensor, "broadcast");
  check_peer(root, "broadcast");
  return done(CommKind::kBroadcast, nbytes(tensor));
}

WorkHandle LocalCommunicator::send(at::Tensor tensor, int dst, int tag) {
  check_tensor(tensor, "send");
  check_peer(dst, "send");
  mailbox_.emplace(tag, tensor.clone());
  return done(CommKind::kSend, nbytes(tensor));
}

WorkHandle LocalCommunicator::recv(at::Tensor tensor, int src, int tag) {
  check_tensor(tensor, "recv");
  check_peer(src, "recv");
  const auto it = mailbox_.find(tag);
  TORCH_CHECK(it != mailbox_.end(), "recv on group '", name_, "' with tag ", tag,
              ": no message was sent with that tag, and this rank is the group's only one");
  tensor.copy_(it->second.view_as(tensor));
  mailbox_.erase(it);
  return done(CommKind::kRecv, nbytes(tensor));
}

WorkHandle LocalCommunicator::barrier() { return done(CommKind::kBarrier, 0); }

std::string LocalCommunicator::broadcast_bytes(std::string bytes, int root) {
  check_peer(root, "broadcast_bytes");
  done(CommKind::kBroadcast, static_cast<int64_t>(bytes.size()));
  return bytes;
}

std::vector<std::string> LocalCommunicator::gather_bytes(const std::string& bytes, int root) {
  check_peer(root, "gather_bytes");
  done(CommKind::kGather, static_cast<int64_t>(bytes.size()));
  return {bytes};
}

std::vector<std::string> LocalCommunicator::all_gather_bytes(const std::string& bytes) {
  done(CommKind::kGather, static_cast<int64_t>(bytes.size()));
  return {bytes};
}

std::unique_ptr<Communicator> LocalCommunicator::split(int color, int /*key*/,
                                                       const std::string& name,
                                                       double /*timeout_s*/) {
  if (color == kNoGroup) return nullptr;
  return std::make_unique<LocalCommunicator>(name, world_ranks_.front());
}

}  // namespace trident
