// NCCL backend of the Communicator: operations queued on the group's stream behind CUDA
// events, Work handles that count bytes and time, and the timeout that aborts NCCL and
// ends the job with a message naming the rank, the group and the operation.
#include "parallel/nccl_communicator.h"

#include <c10/util/Exception.h>  // TORCH_CHECK
#include <sched.h>               // sched_yield

#include <algorithm>  // std::min, std::max
#include <chrono>     // std::chrono::steady_clock
#include <cmath>      // std::isfinite
#include <cstdio>     // std::fprintf
#include <sstream>    // std::ostringstream
#include <stdexcept>  // std::runtime_error
#include <thread>     // std::this_thread::sleep_for

#include "parallel/cuda_streams.h"  // current_stream, record_stream
#include "parallel/nccl_backend.h"  // make_nccl_communicator
#include "parallel/world.h"         // world_rank, abort_job

namespace trident {

namespace {

using Clock = std::chrono::steady_clock;

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(status));
}

void check_nccl(ncclResult_t status, const char* what) {
  if (status != ncclSuccess && status != ncclInProgress)
    throw std::runtime_error(std::string("NCCL: ") + what + ": " + ncclGetErrorString(status));
}

ncclDataType_t nccl_type(at::ScalarType dtype) {
  switch (dtype) {
    case at::kDouble:
      return ncclFloat64;
    case at::kFloat:
      return ncclFloat32;
    case at::kBFloat16:
      return ncclBfloat16;
    case at::kHalf:
      return ncclFloat16;
    case at::kLong:
      return ncclInt64;
    case at::kInt:
      return ncclInt32;
    case at::kByte:
      return ncclUint8;
    default:
      break;
  }
  TORCH_CHECK(false, "communicator: unsupported dtype ", dtype,
              " (supported: float64, float32, bfloat16, float16, int64, int32, uint8)");
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kAverage:
      return ncclAvg;
    case ReduceOp::kMax:
      return ncclMax;
  }
  return ncclSum;
}

void check_tensor(const at::Tensor& t, int device, const char* what) {
  TORCH_CHECK(t.defined(), "communicator: ", what, " tensor is undefined");
  TORCH_CHECK(t.is_contiguous(), "communicator: ", what, " tensor must be contiguous");
  TORCH_CHECK(t.device().is_cuda() && t.device().index() == device, "communicator: the NCCL ",
              "backend takes tensors on cuda:", device, ", got one on ", t.device().str());
}

int64_t nbytes(const at::Tensor& t) { return static_cast<int64_t>(t.numel() * t.element_size()); }

/// A host tensor: the operation goes to the group's host (MPI) communicator. Scalars that
/// the trainer agrees on (loss, flags, report counts) stay on the host, as do metadata.
bool on_host(const at::Tensor& t) { return t.defined() && t.device().is_cpu(); }

/// A queued NCCL operation: complete when its event has fired on the group's stream.
class NcclWork : public Work {
 public:
  NcclWork(NcclCommunicator& comm, CommCounter& counter, CommKind kind, int64_t bytes,
           cudaEvent_t done, cudaStream_t compute, std::vector<at::Tensor> keep_alive)
      : comm_(comm),
        counter_(counter),
        kind_(kind),
        bytes_(bytes),
        done_event_(done),
        compute_(compute),
        keep_alive_(std::move(keep_alive)),
        start_(Clock::now()) {}

  ~NcclWork() override { cudaEventDestroy(done_event_); }

  bool test() override {
    if (done_) return true;
    const auto from = Clock::now();
    const bool finished = poll();
    counter_.wait_seconds += std::chrono::duration<double>(Clock::now() - from).count();
    return finished;
  }

  /// Orders the compute stream after the operation, then blocks the host until it has
  /// completed, so that a rank that never joins is found out within the timeout.
  void wait() override {
    if (done_) return;
    const auto from = Clock::now();
    check_cuda(cudaStreamWaitEvent(compute_, done_event_, 0), "cudaStreamWaitEvent");
    const bool bounded = std::isfinite(comm_.timeout_s());
    const auto deadline = bounded ? start_ + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(comm_.timeout_s()))
                                  : Clock::time_point::max();
    int spins = 0;
    while (!poll()) {
      if (++spins < 64) {
        sched_yield();
        continue;
      }
      if (bounded && Clock::now() > deadline) abort_on_timeout();
      // A peer that failed (or a broken link) surfaces as NCCL's asynchronous error.
      if (spins % 1024 == 0) {
        const ncclResult_t failed = comm_.async_error();
        if (failed != ncclSuccess && failed != ncclInProgress) abort_on_error(failed);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    counter_.wait_seconds += std::chrono::duration<double>(Clock::now() - from).count();
  }

 private:
  bool poll() {
    if (done_) return true;
    const cudaError_t status = cudaEventQuery(done_event_);
    if (status == cudaErrorNotReady) return false;
    check_cuda(status, "cudaEventQuery");
    done_ = true;
    keep_alive_.clear();
    counter_.seconds += std::chrono::duration<double>(Clock::now() - start_).count();
    return true;
  }

  [[noreturn]] void abort_on_error(ncclResult_t failed) {
    std::fprintf(stderr,
                 "trident: error: rank %d: %s of %lld bytes on group '%s' (NCCL on cuda:%d) "
                 "failed: %s; another rank of the group failed or its link broke\n",
                 world_rank(), comm_kind_name(kind_), static_cast<long long>(bytes_),
                 comm_.name().c_str(), comm_.device(), ncclGetErrorString(failed));
    std::fflush(stderr);
    comm_.abort();
    abort_job(3);
    std::abort();
  }

  [[noreturn]] void abort_on_timeout() {
    std::ostringstream ranks;
    for (size_t i = 0; i < comm_.world_ranks().size(); ++i)
      ranks << (i ? "," : "") << comm_.world_ranks()[i];
    std::fprintf(stderr,
                 "trident: error: rank %d: %s of %lld bytes on group '%s' (ranks %s, NCCL on "
                 "cuda:%d) did not complete within %.1f s; another rank of the group failed or "
                 "is waiting elsewhere (raise parallel.timeout_s if a step is legitimately this "
                 "slow)\n",
                 world_rank(), comm_kind_name(kind_), static_cast<long long>(bytes_),
                 comm_.name().c_str(), ranks.str().c_str(), comm_.device(), comm_.timeout_s());
    std::fflush(stderr);
    comm_.abort();
    abort_job(3);
    std::abort();
  }

  NcclCommunicator& comm_;
  CommCounter& counter_;
  CommKind kind_;
  int64_t bytes_;
  cudaEvent_t done_event_;
  cudaStream_t compute_;
  std::vector<at::Tensor> keep_alive_;
  Clock::time_point start_;
  bool done_ = false;
};

/// Switches the calling thread to `device` for a scope.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }

 private:
  int previous_ = 0;
};

}  // namespace

NcclCommunicator::NcclCommunicator(std::unique_ptr<Communicator> bootstrap, int device,
                                   double timeout_s)
    : bootstrap_(std::move(bootstrap)), device_(device), timeout_s_(timeout_s) {
  int devices = 0;
  const cudaError_t found = cudaGetDeviceCount(&devices);
  if (found != cudaSuccess || devices == 0)
    throw std::runtime_error("train.device = \"cuda\": no GPU is visible to rank " +
                             std::to_string(world_rank()) + " (" + cudaGetErrorString(found) +
                             "); run on a GPU node, or set train.device = \"cpu\"");
  TORCH_CHECK(device >= 0 && device < devices, "communicator: cuda:", device,
              " does not exist (this node has ", devices, " GPUs)");
  DeviceGuard guard(device_);
  // Rank 0 draws the id; the group learns it over the bootstrap communicator.
  ncclUniqueId id{};
  if (bootstrap_->rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  const std::string shared =
      bootstrap_->broadcast_bytes(std::string(reinterpret_cast<const char*>(&id), sizeof id), 0);
  std::copy(shared.begin(), shared.end(), reinterpret_cast<char*>(&id));
  check_nccl(ncclCommInitRank(&comm_, bootstrap_->size(), id, bootstrap_->rank()),
             "ncclCommInitRank");
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  check_cuda(cudaMalloc(&scratch_, sizeof(float)), "cudaMalloc");
  count_also(bootstrap_.get());
}

NcclCommunicator::~NcclCommunicator() {
  if (scratch_) cudaFree(scratch_);
  if (stream_) cudaStreamDestroy(stream_);
  if (comm_) ncclCommDestroy(comm_);
}

ncclResult_t NcclCommunicator::async_error() const {
  ncclResult_t state = ncclSuccess;
  if (comm_ != nullptr && ncclCommGetAsyncError(comm_, &state) != ncclSuccess)
    return ncclSystemError;
  return state;
}

void NcclCommunicator::abort() {
  for (auto& [peer, four] : channels_)
    for (auto& c : four) c->abort();
  if (comm_) ncclCommAbort(comm_);
  comm_ = nullptr;
}

void NcclCommunicator::open_ring_channels() {
  const int n = size(), me = rank();
  // Edge a joins a and a + 1 (mod n); with two ranks there is one edge.
  for (int a = 0; a < (n == 2 ? 1 : n); ++a) {
    const int lo = std::min(a, (a + 1) % n), hi = std::max(a, (a + 1) % n);
    const bool member = me == lo || me == hi;
    for (int k = 0; k < 4; ++k) {
      // Collective over the group; then NCCL's start-up over the edge's two ranks, lo first.
      std::unique_ptr<Communicator> pair =
          bootstrap_->split(member ? a : kNoGroup, me == lo ? 0 : 1, name() + "-link", timeout_s_);
      if (!member) continue;
      auto c = std::make_unique<NcclCommunicator>(std::move(pair), device_, timeout_s_);
      count_also(c.get());
      channels_[me == lo ? hi : lo][static_cast<size_t>(k)] = std::move(c);
    }
  }
}

std::pair<NcclCommunicator*, int> NcclCommunicator::channel(int from, int to, int tag) const {
  const int peer = from == rank() ? to : from;
  const auto it = channels_.find(peer);
  if (it == channels_.end()) return {nullptr, 0};
  const int lo = std::min(from, to);
  const size_t k = static_cast<size_t>((from == lo ? 0 : 2) + tag % 2);
  return {it->second[k].get(), peer == lo ? 0 : 1};
}

WorkHandle NcclCommunicator::enqueue(CommKind kind, int64_t bytes, std::vector<at::Tensor> tensors,
                                     const std::function<ncclResult_t(cudaStream_t)>& launch) {
  auto& counter = counters_[static_cast<int>(kind)];
  const auto from = Clock::now();
  DeviceGuard guard(device_);
  const cudaStream_t compute = cuda::current_stream(device_);
  // The operation reads what the compute stream has written so far: order it after.
  cudaEvent_t ready = nullptr, done = nullptr;
  check_cuda(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreate");
  check_cuda(cudaEventRecord(ready, compute), "cudaEventRecord");
  check_cuda(cudaStreamWaitEvent(stream_, ready, 0), "cudaStreamWaitEvent");
  cudaEventDestroy(ready);
  check_nccl(launch(stream_), comm_kind_name(kind));
  check_cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
  check_cuda(cudaEventRecord(done, stream_), "cudaEventRecord");
  // The caching allocator must not hand these tensors to the compute stream before the
  // communication stream is done with them.
  for (const at::Tensor& t : tensors) cuda::record_stream(t, stream_);
  counter.calls += 1;
  counter.bytes += bytes;
  counter.wait_seconds += std::chrono::duration<double>(Clock::now() - from).count();
  return std::make_shared<NcclWork>(*this, counter, kind, bytes, done, compute, std::move(tensors));
}

WorkHandle NcclCommunicator::all_reduce(at::Tensor tensor, ReduceOp op) {
  if (on_host(tensor)) return bootstrap_->all_reduce(tensor, op);
  check_tensor(tensor, device_, "all_reduce");
  count_collective(nbytes(tensor));
  return enqueue(CommKind::kAllReduce, nbytes(tensor), {tensor}, [&](cudaStream_t s) {
    return ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(), tensor.numel(),
                         nccl_type(tensor.scalar_type()), nccl_op(op), comm_, s);
  });
}

WorkHandle NcclCommunicator::reduce_scatter(at::Tensor output, at::Tensor input, ReduceOp op) {
  if (on_host(input)) return bootstrap_->reduce_scatter(output, input, op);
  check_tensor(output, device_, "reduce_scatter output");
  check_tensor(input, device_, "reduce_scatter input");
  TORCH_CHECK(input.numel() == output.numel() * size(),
              "reduce_scatter: input must hold size() chunks of the output's size");
  count_collective(nbytes(output));
  return enqueue(CommKind::kReduceScatter, nbytes(input), {output, input}, [&](cudaStream_t s) {
    return ncclReduceScatter(input.data_ptr(), output.data_ptr(), output.numel(),
                             nccl_type(input.scalar_type()), nccl_op(op), comm_, s);
  });
}

WorkHandle NcclCommunicator::all_gather(at::Tensor output, at::Tensor input) {
  if (on_host(input)) return bootstrap_->all_gather(output, input);
  check_tensor(output, device_, "all_gather output");
  check_tensor(input, device_, "all_gather input");
  TORCH_CHECK(output.numel() == input.numel() * size(),
              "all_gather: output must hold size() chunks of the input's size");
  count_collective(nbytes(input));
  return enqueue(CommKind::kAllGather, nbytes(output), {output, input}, [&](cudaStream_t s) {
    return ncclAllGather(input.data_ptr(), output.data_ptr(), input.numel(),
                         nccl_type(input.scalar_type()), comm_, s);
  });
}

WorkHandle NcclCommunicator::broadcast(at::Tensor tensor, int root) {
  if (on_host(tensor)) return bootstrap_->broadcast(tensor, root);
  check_tensor(tensor, device_, "broadcast");
  count_collective(rank() == root ? nbytes(tensor) : 0);
  return enqueue(CommKind::kBroadcast, nbytes(tensor), {tensor}, [&](cudaStream_t s) {
    return ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(), tensor.numel(),
                         nccl_type(tensor.scalar_type()), root, comm_, s);
  });
}

WorkHandle NcclCommunicator::send(at::Tensor tensor, int dst, int tag) {
  if (on_host(tensor)) return bootstrap_->send(tensor, dst, tag);
  TORCH_CHECK(tag >= 0, "send: tags are non-negative");
  if (const auto [c, peer] = channel(rank(), dst, tag); c != nullptr)
    return c->send(tensor, peer, tag);
  check_tensor(tensor, device_, "send");
  count_sent(dst, nbytes(tensor));
  return enqueue(CommKind::kSend, nbytes(tensor), {tensor}, [&](cudaStream_t s) {
    return ncclSend(tensor.data_ptr(), tensor.numel(), nccl_type(tensor.scalar_type()), dst, comm_,
                    s);
  });
}

WorkHandle NcclCommunicator::recv(at::Tensor tensor, int src, int tag) {
  if (on_host(tensor)) return bootstrap_->recv(tensor, src, tag);
  TORCH_CHECK(tag >= 0, "recv: tags are non-negative");
  if (const auto [c, peer] = channel(src, rank(), tag); c != nullptr)
    return c->recv(tensor, peer, tag);
  check_tensor(tensor, device_, "recv");
  return enqueue(CommKind::kRecv, nbytes(tensor), {tensor}, [&](cudaStream_t s) {
    return ncclRecv(tensor.data_ptr(), tensor.numel(), nccl_type(tensor.scalar_type()), src, comm_,
                    s);
  });
}

WorkHandle NcclCommunicator::all_to_all(at::Tensor output, at::Tensor input,
                                        const std::vector<int64_t>& send_rows,
                                        const std::vector<int64_t>& recv_rows) {
  if (on_host(input)) return bootstrap_->all_to_all(output, input, send_rows, recv_rows);
  check_tensor(output, device_, "all_to_all output");
  check_tensor(input, device_, "all_to_all input");
  const int64_t row = all_to_all_row_elements(output, input, send_rows, recv_rows, size());
  for (int r = 0; r < size(); ++r)
    if (r != rank()) count_sent(r, send_rows[static_cast<size_t>(r)] * row * input.element_size());
  return enqueue(CommKind::kAllToAll, nbytes(input), {output, input}, [&](cudaStream_t s) {
    // One group of sends and receives, as NCCL's own all-to-all examples do.
    const ncclDataType_t type = nccl_type(input.scalar_type());
    const size_t bytes = static_cast<size_t>(input.element_size());
    auto* in = static_cast<char*>(input.data_ptr());
    auto* out = static_cast<char*>(output.data_ptr());
    ncclResult_t result = ncclGroupStart();
    for (int r = 0; r < size() && result == ncclSuccess; ++r) {
      const auto n_send = static_cast<size_t>(send_rows[static_cast<size_t>(r)] * row);
      const auto n_recv = static_cast<size_t>(recv_rows[static_cast<size_t>(r)] * row);
      if (n_send > 0) result = ncclSend(in, n_send, type, r, comm_, s);
      if (n_recv > 0 && result == ncclSuccess) result = ncclRecv(out, n_recv, type, r, comm_, s);
      in += n_send * bytes;
      out += n_recv * bytes;
    }
    const ncclResult_t ended = ncclGroupEnd();
    return result == ncclSuccess ? ended : result;
  });
}

WorkHandle NcclCommunicator::barrier() {
  return enqueue(CommKind::kBarrier, 0, {}, [&](cudaStream_t s) {
    return ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, s);
  });
}

std::string NcclCommunicator::broadcast_bytes(std::string bytes, int root) {
  return bootstrap_->broadcast_bytes(std::move(bytes), root);
}

std::vector<std::string> NcclCommunicator::gather_bytes(const std::string& bytes, int root) {
  return bootstrap_->gather_bytes(bytes, root);
}

std::vector<std::string> NcclCommunicator::all_gather_bytes(const std::string& bytes) {
  return bootstrap_->all_gather_bytes(bytes);
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key, const std::string& name,
                                                      double timeout_s) {
  std::unique_ptr<Communicator> sub = bootstrap_->split(color, key, name, timeout_s);
  if (!sub) return nullptr;
  return std::make_unique<NcclCommunicator>(std::move(sub), device_, timeout_s);
}

}  // namespace trident

// nccl_backend.h where the NCCL communicator is built.
namespace trident {

bool nccl_built() { return true; }

std::string gpu_identity(int device) {
  char bus[64] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess) return std::to_string(device);
  return bus;
}

std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> group,
                                                     int device, double timeout_s,
                                                     bool ring_channels) {
  auto comm = std::make_unique<NcclCommunicator>(std::move(group), device, timeout_s);
  if (ring_channels) comm->open_ring_channels();
  return comm;
}

}  // namespace trident
