// MPI backend of the Communicator: non-blocking MPI calls wrapped in Work handles that
// count bytes and time, finish dtype conversions on completion, and end the job on timeout.
#include "parallel/mpi_communicator.h"

#include <ATen/ATen.h>           // at::empty, at::add_out: the tensor ops of reductions
#include <c10/util/Exception.h>  // TORCH_CHECK

#include "parallel/mpi_work.h"  // MpiWork, Blocked, nbytes

namespace trident {

namespace {

using mpi_detail::Blocked;
using mpi_detail::MpiWork;
using mpi_detail::nbytes;

/// The MPI datatype that moves `dtype` unchanged (bf16 travels as 16-bit words).
MPI_Datatype transport_type(at::ScalarType dtype) {
  switch (dtype) {
    case at::kDouble:
      return MPI_DOUBLE;
    case at::kFloat:
      return MPI_FLOAT;
    case at::kLong:
      return MPI_INT64_T;
    case at::kInt:
      return MPI_INT32_T;
    case at::kBFloat16:
      return MPI_UINT16_T;
    case at::kHalf:
      return MPI_UINT16_T;
    case at::kByte:
      return MPI_UINT8_T;
    default:
      break;
  }
  TORCH_CHECK(false, "communicator: unsupported dtype ", dtype,
              " (supported: float64, float32, bfloat16, int64, int32, uint8)");
}

/// Reductions need a type MPI can add: 16-bit floats are reduced in float32.
bool needs_upcast(at::ScalarType dtype) { return dtype == at::kBFloat16 || dtype == at::kHalf; }

MPI_Op mpi_op(ReduceOp op) { return op == ReduceOp::kMax ? MPI_MAX : MPI_SUM; }

void check_tensor(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.defined(), "communicator: ", what, " tensor is undefined");
  TORCH_CHECK(t.is_contiguous(), "communicator: ", what, " tensor must be contiguous");
  TORCH_CHECK(t.device().is_cpu(), "communicator: the MPI backend takes CPU tensors");
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm, std::string name, std::vector<int> world_ranks,
                                 double timeout_s, CommOwnership ownership)
    : comm_(comm),
      name_(std::move(name)),
      world_ranks_(std::move(world_ranks)),
      timeout_s_(timeout_s),
      owned_(ownership == CommOwnership::kTake) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  MPI_Comm_dup(comm_, &ring_comm_);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&ring_comm_);
  if (!finalized && owned_ && comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_SELF &&
      comm_ != MPI_COMM_NULL)
    MPI_Comm_free(&comm_);
}

WorkHandle MpiCommunicator::all_reduce(at::Tensor tensor, ReduceOp op) {
  check_tensor(tensor, "all_reduce");
  auto& counter = counters_[static_cast<int>(CommKind::kAllReduce)];
  Blocked blocked(*this, counter);
  at::Tensor buffer = needs_upcast(tensor.scalar_type()) ? tensor.to(at::kFloat) : tensor;
  auto work = std::make_shared<MpiWork>(*this, counter, CommKind::kAllReduce, nbytes(tensor),
                                        std::vector<at::Tensor>{tensor, buffer});
  MPI_Iallreduce(MPI_IN_PLACE, buffer.data_ptr(), static_cast<int>(buffer.numel()),
                 transport_type(buffer.scalar_type()), mpi_op(op), comm_, work->request());
  count_collective(nbytes(buffer));
  const int n = size_;
  work->on_complete([tensor, buffer, op, n]() mutable {
    if (op == ReduceOp::kAverage) buffer.div_(n);
    if (!buffer.is_same(tensor)) tensor.copy_(buffer);
  });
  return work;
}

WorkHandle MpiCommunicator::reduce_scatter(at::Tensor output, at::Tensor input, ReduceOp op) {
  check_tensor(output, "reduce_scatter output");
  check_tensor(input, "reduce_scatter input");
  TORCH_CHECK(input.numel() == output.numel() * size_, "reduce_scatter on group '", name_,
              "': input has ", input.numel(), " elements, expected ", output.numel() * size_);
  TORCH_CHECK(input.scalar_type() == output.scalar_type(), "reduce_scatter: dtypes differ");
  auto& counter = counters_[static_cast<int>(CommKind::kReduceScatter)];
  Blocked blocked(*this, counter);
  const bool up = needs_upcast(input.scalar_type());
  at::Tensor in = up ? input.to(at::kFloat) : input;
  at::Tensor out = up ? at::empty(output.sizes(), output.options().dtype(at::kFloat)) : output;
  at::Tensor send_buf = at::empty_like(out), recv_buf = at::empty_like(out);
  auto work = std::make_shared<MpiWork>(
      *this, counter, CommKind::kReduceScatter, nbytes(input),
      std::vector<at::Tensor>{input, in, out, output, send_buf, recv_buf});
  // A ring over point-to-point messages (Open MPI's reduce_scatter_block takes twice its
  // all-reduce's time on shared memory): in round s = 0 .. n-2 this rank sends its partial
  // sum of chunk (r - s - 1) mod n to the next rank and receives the previous rank's partial
  // sum of chunk (r - s - 2) mod n, to which it adds its own; the last round leaves the
  // full sum of chunk r. Each operation has its own tag, so that rounds of operations in
  // flight together never match each other's messages.
  const int n = size_, r = rank_;
  const int64_t S = out.numel();
  auto chunk = [in, S, n](int i) {
    return in.narrow(0, static_cast<int64_t>((i % n + n) % n) * S, S);
  };
  auto combine = [op](at::Tensor& dst, const at::Tensor& a, const at::Tensor& b) {
    if (op == ReduceOp::kMax) {
      at::maximum_out(dst, a, b);
    } else {
      at::add_out(dst, a, b);
    }
  };
  if (n == 1) {
    out.copy_(in);
  } else {
    const MPI_Datatype type = transport_type(in.scalar_type());
    const int tag = next_tag_;
    next_tag_ = (next_tag_ + 1) % kMaxTag;
    MPI_Comm comm = ring_comm_;
    MpiWork* w = work.get();
    auto post = [=](const at::Tensor& partial) {
      MPI_Isend(partial.data_ptr(), static_cast<int>(S), type, (r + 1) % n, tag, comm,
                w->request());
      MPI_Irecv(recv_buf.data_ptr(), static_cast<int>(S), type, (r + n - 1) % n, tag, comm,
                w->request());
    };
    post(chunk(r - 1));
    count_sent((r + 1) % n, (n - 1) * nbytes(out));  // n - 1 rounds of one chunk each
    work->on_round([=, round = 0]() mutable {
      at::Tensor mine = chunk(r - round - 2);
      if (round == n - 2) {
        combine(out, recv_buf, mine);
        return true;
      }
      combine(send_buf, recv_buf, mine);
      ++round;
      post(send_buf);
      return false;
    });
  }
  work->on_complete([output, out, op, n]() mutable {
    if (op == ReduceOp::kAverage) out.div_(n);
    if (!out.is_same(output)) output.copy_(out);
  });
  if (n == 1) work->test();
  return work;
}

WorkHandle MpiCommunicator::all_gather(at::Tensor output, at::Tensor input) {
  check_tensor(output, "all_gather output");
  check_tensor(input, "all_gather input");
  TORCH_CHECK(output.numel() == input.numel() * size_, "all_gather on group '", name_,
              "': output has ", output.numel(), " elements, expected ", input.numel() * size_);
  TORCH_CHECK(input.scalar_type() == output.scalar_type(), "all_gather: dtypes differ");
  auto& counter = counters_[static_cast<int>(CommKind::kAllGather)];
  Blocked blocked(*this, counter);
  auto work = std::make_shared<MpiWork>(*this, counter, CommKind::kAllGather, nbytes(output),
                                        std::vector<at::Tensor>{output, input});
  const MPI_Datatype type = transport_type(input.scalar_type());
  MPI_Iallgather(input.data_ptr(), static_cast<int>(input.numel()), type, output.data_ptr(),
                 static_cast<int>(input.numel()), type, comm_, work->request());
  count_collective(nbytes(input));
  return work;
}

WorkHandle MpiCommunicator::broadcast(at::Tensor tensor, int root) {
  check_tensor(tensor, "broadcast");
  auto& counter = counters_[static_cast<int>(CommKind::kBroadcast)];
  Blocked blocked(*this, counter);
  auto work = std::make_shared<MpiWork>(*this, counter, CommKind::kBroadcast, nbytes(tensor),
                                        std::vector<at::Tensor>{tensor});
  MPI_Ibcast(tensor.data_ptr(), static_cast<int>(tensor.numel()),
             transport_type(tensor.scalar_type()), root, comm_, work->request());
  count_collective(rank_ == root ? nbytes(tensor) : 0);
  return work;
}

WorkHandle MpiCommunicator::send(at::Tensor tensor, int dst, int tag) {
  check_tensor(tensor, "send");
  auto& counter = counters_[static_cast<int>(CommKind::kSend)];
  Blocked blocked(*this, counter);
  auto work = std::make_shared<MpiWork>(*this, counter, CommKind::kSend, nbytes(tensor),
                                        std::vector<at::Tensor>{tensor});
  MPI_Isend(tensor.data_ptr(), static_cast<int>(tensor.numel()),
            transport_type(tensor.scalar_type()), dst, tag, comm_, work->request());
  count_sent(dst, nbytes(tensor));
  return work;
}

WorkHandle MpiCommunicator::recv(at::Tensor tensor, int src, int tag) {
  check_tensor(tensor, "recv");
  auto& counter = counters_[static_cast<int>(CommKind::kRecv)];
  Blocked blocked(*this, counter);
  auto work = std::make_shared<MpiWork>(*this, counter, CommKind::kRecv, nbytes(tensor),
                                        std::vector<at::Tensor>{tensor});
  MPI_Irecv(tensor.data_ptr(), static_cast<int>(tensor.numel()),
            transport_type(tensor.scalar_type()), src, tag, comm_, work->request());
  return work;
}

WorkHandle MpiCommunicator::all_to_all(at::Tensor output, at::Tensor input,
                                       const std::vector<int64_t>& send_rows,
                                       const std::vector<int64_t>& recv_rows) {
  check_tensor(output, "all_to_all output");
  check_tensor(input, "all_to_all input");
  const int64_t row = all_to_all_row_elements(output, input, send_rows, recv_rows, size_);
  auto& counter = counters_[static_cast<int>(CommKind::kAllToAll)];
  Blocked blocked(*this, counter);
  // Counts and displacements in elements; MPI's are ints.
  std::vector<int> send_counts, send_displs, recv_counts, recv_displs;
  int64_t send_at = 0, recv_at = 0;
  for (int r = 0; r < size_; ++r) {
    const int64_t s = send_rows[static_cast<size_t>(r)] * row,
                  v = recv_rows[static_cast<size_t>(r)] * row;
    TORCH_CHECK(send_at + s <= INT32_MAX && recv_at + v <= INT32_MAX, "all_to_all on group '",
                name_, "': more than 2^31 elements");
    send_counts.push_back(static_cast<int>(s));
    send_displs.push_back(static_cast<int>(send_at));
    recv_counts.push_back(static_cast<int>(v));
    recv_displs.push_back(static_cast<int>(recv_at));
    if (r != rank_) count_sent(r, s * static_cast<int64_t>(input.element_size()));
    send_at += s;
    recv_at += v;
  }
  auto work = std::make_shared<MpiWork>(*this, counter, CommKind::kAllToAll, nbytes(input),
                                        std::vector<at::Tensor>{output, input});
  const MPI_Datatype type = transport_type(input.scalar_type());
  MPI_Ialltoallv(input.data_ptr(), send_counts.data(), send_displs.data(), type, output.data_ptr(),
                 recv_counts.data(), recv_displs.data(), type, comm_, work->request());
  return work;
}

WorkHandle MpiCommunicator::barrier() {
  auto& counter = counters_[static_cast<int>(CommKind::kBarrier)];
  Blocked blocked(*this, counter);
  auto work =
      std::make_shared<MpiWork>(*this, counter, CommKind::kBarrier, 0, std::vector<at::Tensor>{});
  MPI_Ibarrier(comm_, work->request());
  return work;
}

}  // namespace trident
