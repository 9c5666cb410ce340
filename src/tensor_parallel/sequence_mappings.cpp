// Autograd functions behind the sequence-parallel mappings.
#include "tensor_parallel/sequence_mappings.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>  // torch::autograd::Function, AutogradContext

#include "parallel/communicator.h"
#include "tensor_parallel/mappings.h"  // copy_to_tp_region

namespace trident {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The communicator rides in saved_data as an integer: it outlives every graph built with
// it (the ParallelContext is made once in main).
int64_t stash(Communicator& c) { return reinterpret_cast<int64_t>(&c); }
Communicator& unstash(int64_t c) { return *reinterpret_cast<Communicator*>(c); }
Communicator& unstash(AutogradContext* ctx) { return unstash(ctx->saved_data["comm"].toInt()); }

at::Tensor slice_sequence(const at::Tensor& x, Communicator& tp) {
  const int64_t n = x.size(1) / tp.size();
  return x.narrow(1, tp.rank() * n, n).contiguous();
}

struct ScatterToSequence : torch::autograd::Function<ScatterToSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    ctx->saved_data["comm"] = comm;
    return slice_sequence(x, unstash(comm));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    return {all_gather_sequence(grad[0], unstash(ctx)), at::Tensor()};
  }
};

struct GatherFromSequence : torch::autograd::Function<GatherFromSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    ctx->saved_data["comm"] = comm;
    return all_gather_sequence(x, unstash(comm));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    return {reduce_scatter_sequence(grad[0], unstash(ctx)), at::Tensor()};
  }
};

struct ReduceScatterToSequence : torch::autograd::Function<ReduceScatterToSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    ctx->saved_data["comm"] = comm;
    return reduce_scatter_sequence(x, unstash(comm));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    return {all_gather_sequence(grad[0], unstash(ctx)), at::Tensor()};
  }
};

}  // namespace

at::Tensor all_gather_sequence(const at::Tensor& x, Communicator& tp) {
  // The collective concatenates along dimension 0: gather (n, B, ...) into (n*tp, B, ...).
  at::Tensor moved = x.transpose(0, 1).contiguous();  // (n, B, ...)
  std::vector<int64_t> shape = moved.sizes().vec();
  shape[0] *= tp.size();
  at::Tensor gathered = at::empty(shape, x.options());
  tp.all_gather(gathered, moved)->wait();
  return gathered.transpose(0, 1).contiguous();  // (B, n*tp, ...)
}

at::Tensor reduce_scatter_sequence(const at::Tensor& x, Communicator& tp) {
  at::Tensor moved = x.transpose(0, 1).contiguous();  // (T, B, ...)
  std::vector<int64_t> shape = moved.sizes().vec();
  shape[0] /= tp.size();
  at::Tensor mine = at::empty(shape, x.options());
  tp.reduce_scatter(mine.view(-1), moved.view(-1))->wait();  // the collective takes flat chunks
  return mine.transpose(0, 1).contiguous();                  // (B, T/tp, ...)
}

at::Tensor scatter_to_sequence_region(const at::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : ScatterToSequence::apply(x, stash(tp));
}
at::Tensor gather_from_sequence_region(const at::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : GatherFromSequence::apply(x, stash(tp));
}
at::Tensor reduce_scatter_to_sequence_region(const at::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : ReduceScatterToSequence::apply(x, stash(tp));
}
at::Tensor sum_grad_over_sequence(const at::Tensor& w, Communicator& tp) {
  // The conjugate pair of copy_to_tp_region is exactly this: identity forward, all-reduce
  // of the gradient backward.
  return copy_to_tp_region(w, tp);
}

}  // namespace trident
