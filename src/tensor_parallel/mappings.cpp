// Autograd functions behind the tp-region mappings.
#include "tensor_parallel/mappings.h"

#include <torch/autograd.h>  // torch::autograd::Function, AutogradContext

#include "parallel/communicator.h"

namespace trident {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The communicator rides in saved_data as an integer: it outlives every graph built
// with it (the ParallelContext is made once in main).
int64_t stash(Communicator& c) { return reinterpret_cast<int64_t>(&c); }
Communicator& unstash(AutogradContext* ctx) {
  return *reinterpret_cast<Communicator*>(ctx->saved_data["comm"].toInt());
}

at::Tensor all_reduce_copy(const at::Tensor& x, Communicator& comm) {
  at::Tensor out = x.contiguous().clone();
  comm.all_reduce(out)->wait();
  return out;
}

struct CopyToTp : torch::autograd::Function<CopyToTp> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    ctx->saved_data["comm"] = comm;
    return x.view_as(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    return {all_reduce_copy(grad[0], unstash(ctx)), at::Tensor()};
  }
};

struct ReduceFromTp : torch::autograd::Function<ReduceFromTp> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    return all_reduce_copy(x, *reinterpret_cast<Communicator*>(comm));
  }
  static variable_list backward(AutogradContext*, variable_list grad) {
    return {grad[0], at::Tensor()};
  }
};

struct ReduceGradOverReplicas : torch::autograd::Function<ReduceGradOverReplicas> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& w, int64_t comm,
                            int64_t replicas) {
    ctx->saved_data["comm"] = comm;
    ctx->saved_data["replicas"] = replicas;
    return w.view_as(w);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    Communicator& tp = unstash(ctx);
    const int64_t replicas = ctx->saved_data["replicas"].toInt();
    // One slot per group of replicas: a rank writes its part into its group's slot, and
    // one all-reduce over tp sums every group at once (no sub-communicators needed).
    const int64_t group = tp.rank() / replicas;
    std::vector<int64_t> shape = grad[0].sizes().vec();
    shape.insert(shape.begin(), tp.size() / replicas);
    at::Tensor slots = at::zeros(shape, grad[0].options());  // (tp/replicas, ...)
    slots[group].copy_(grad[0]);
    tp.all_reduce(slots)->wait();
    return {slots[group].clone(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor reduce_grad_over_replicas(const at::Tensor& w, Communicator& tp, int replicas) {
  if (replicas <= 1) return w;
  return ReduceGradOverReplicas::apply(w, stash(tp), static_cast<int64_t>(replicas));
}

at::Tensor copy_to_tp_region(const at::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : CopyToTp::apply(x, stash(tp));
}
at::Tensor reduce_from_tp_region(const at::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : ReduceFromTp::apply(x, stash(tp));
}

}  // namespace trident
