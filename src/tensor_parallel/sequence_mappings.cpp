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

/// This rank's slice of dimension 1, (B, T, ...) -> (B, T/tp, ...), as a new tensor.
at::Tensor own_slice(const at::Tensor& x, Communicator& tp) {
  const int64_t n = x.size(1) / tp.size();
  return x.narrow(1, tp.rank() * n, n).contiguous();
}

struct GatherWholeGrad : torch::autograd::Function<GatherWholeGrad> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    ctx->saved_data["comm"] = comm;
    return all_gather_sequence(x, unstash(comm));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    return {own_slice(grad[0], unstash(ctx)), at::Tensor()};
  }
};

struct SplitToSequence : torch::autograd::Function<SplitToSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    ctx->saved_data["comm"] = comm;
    return own_slice(x, unstash(comm));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    return {all_gather_sequence(grad[0], unstash(ctx)), at::Tensor()};
  }
};

}  // namespace

// The collectives concatenate flat chunks, one per rank, while the sequence is dimension
// 1: each helper makes one copy that puts the rank dimension first (or takes it out).

at::Tensor all_gather_sequence(const at::Tensor& x, Communicator& tp) {
  const at::Tensor mine = x.contiguous();  // (B, n, ...)
  std::vector<int64_t> shape = mine.sizes().vec();
  shape.insert(shape.begin(), tp.size());
  at::Tensor gathered = at::empty(shape, x.options());  // (tp, B, n, ...)
  tp.all_gather(gathered.view(-1), mine.view(-1))->wait();
  std::vector<int64_t> out = mine.sizes().vec();
  out[1] *= tp.size();
  return gathered.movedim(0, 1).reshape(out);  // (B, tp*n, ...), one copy
}

at::Tensor reduce_scatter_sequence(const at::Tensor& x, Communicator& tp) {
  std::vector<int64_t> split = x.sizes().vec();  // (B, T, ...) -> (B, tp, T/tp, ...)
  split[1] /= tp.size();
  const std::vector<int64_t> mine_shape = split;
  split.insert(split.begin() + 1, tp.size());
  const at::Tensor chunks = x.reshape(split).movedim(1, 0).contiguous();  // (tp, B, T/tp, ...)
  at::Tensor mine = at::empty(mine_shape, x.options());                   // (B, T/tp, ...)
  tp.reduce_scatter(mine.view(-1), chunks.view(-1))->wait();
  return mine;
}

at::Tensor gather_from_sequence_region(const at::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : GatherFromSequence::apply(x, stash(tp));
}
at::Tensor reduce_scatter_to_sequence_region(const at::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : ReduceScatterToSequence::apply(x, stash(tp));
}
at::Tensor gather_from_sequence_region_whole_grad(const at::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : GatherWholeGrad::apply(x, stash(tp));
}
at::Tensor split_to_sequence_region(const at::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : SplitToSequence::apply(x, stash(tp));
}
at::Tensor sum_grad_over_sequence(const at::Tensor& w, Communicator& tp) {
  // The conjugate pair of copy_to_tp_region is exactly this: identity forward, all-reduce
  // of the gradient backward.
  return copy_to_tp_region(w, tp);
}

}  // namespace trident
