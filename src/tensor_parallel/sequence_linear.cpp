// The autograd function of the sequence-gathered linear layer: it saves the input's slice
// instead of the gathered sequence, trading one more all-gather in backward for tp times
// less memory, as Megatron does.
#include "tensor_parallel/sequence_linear.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>  // torch::autograd::Function, AutogradContext

#include "parallel/communicator.h"
#include "tensor_parallel/sequence_mappings.h"  // all_gather_sequence, reduce_scatter_sequence

namespace trident {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct SequenceGatheredLinear : torch::autograd::Function<SequenceGatheredLinear> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            int64_t comm) {
    Communicator& tp = *reinterpret_cast<Communicator*>(comm);
    ctx->saved_data["comm"] = comm;
    ctx->save_for_backward({x, weight});
    return at::linear(all_gather_sequence(x, tp), weight);  // (B, T, out/tp)
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    Communicator& tp = *reinterpret_cast<Communicator*>(ctx->saved_data["comm"].toInt());
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor grad = grads[0].contiguous();  // (B, T, out/tp)
    const int64_t out = weight.size(0), in = weight.size(1);
    const at::Tensor full = all_gather_sequence(x, tp);               // (B, T, in), gathered again
    const at::Tensor grad_2d = grad.reshape({-1, out});               // (B*T, out/tp)
    at::Tensor grad_weight = grad_2d.t().mm(full.reshape({-1, in}));  // (out/tp, in)
    at::Tensor grad_x = reduce_scatter_sequence(at::matmul(grad, weight), tp);  // (B, T/tp, in)
    return {grad_x, grad_weight, at::Tensor()};
  }
};

}  // namespace

at::Tensor sequence_gathered_linear(const at::Tensor& x, const at::Tensor& weight,
                                    const at::Tensor& bias, Communicator& tp) {
  // The bias is added outside the function: autograd functions take no undefined inputs, and
  // the addition keeps nothing for backward.
  at::Tensor y = SequenceGatheredLinear::apply(x, weight, reinterpret_cast<int64_t>(&tp));
  return bias.defined() ? y + bias : y;
}

}  // namespace trident
