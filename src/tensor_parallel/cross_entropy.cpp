// The vocab-parallel cross-entropy as one autograd function with a closed-form backward:
// d loss / d logits = softmax - one_hot(target), each rank for its own columns.
#include "tensor_parallel/cross_entropy.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>  // torch::autograd::Function

#include "parallel/communicator.h"

namespace trident {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct VocabParallelCrossEntropy : torch::autograd::Function<VocabParallelCrossEntropy> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& logits_in,
                            const at::Tensor& targets, int64_t comm_ptr, int64_t vocab_start,
                            int64_t vocab) {
    Communicator& tp = *reinterpret_cast<Communicator*>(comm_ptr);
    // Reductions in at least float32: bf16 logits are upcast here.
    const at::ScalarType dtype =
        logits_in.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
    at::Tensor logits = logits_in.to(dtype).contiguous();  // (N, Vl)
    const int64_t local_vocab = logits.size(1);
    if (vocab_start + local_vocab > vocab) {  // padding columns on this rank
      at::Tensor cols = at::arange(vocab_start, vocab_start + local_vocab, at::kLong);
      logits = logits.masked_fill((cols >= vocab).unsqueeze(0),
                                  -std::numeric_limits<double>::infinity());
    }
    at::Tensor max = std::get<0>(logits.max(-1)).contiguous();  // (N)
    if (tp.size() > 1) tp.all_reduce(max, ReduceOp::kMax)->wait();
    at::Tensor shifted = logits - max.unsqueeze(-1);
    at::Tensor exp = shifted.exp();
    at::Tensor sum_exp = exp.sum(-1).contiguous();  // (N)

    at::Tensor local_target = targets - vocab_start;
    at::Tensor mine = (local_target >= 0).logical_and(local_target < local_vocab);  // (N)
    at::Tensor safe_target = local_target.masked_fill(mine.logical_not(), 0);
    at::Tensor picked =
        shifted.gather(1, safe_target.unsqueeze(-1)).squeeze(-1).masked_fill(
            mine.logical_not(), 0.0).contiguous();  // (N)
    if (tp.size() > 1) {
      auto a = tp.all_reduce(sum_exp);
      auto b = tp.all_reduce(picked);
      a->wait();
      b->wait();
    }
    ctx->save_for_backward({exp.div_(sum_exp.unsqueeze(-1)), safe_target, mine});
    ctx->saved_data["dtype"] = static_cast<int64_t>(logits_in.scalar_type());
    return sum_exp.log() - picked;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    auto saved = ctx->get_saved_variables();
    at::Tensor grad = saved[0].clone();  // softmax (N, Vl)
    const at::Tensor& target = saved[1];
    const at::Tensor& mine = saved[2];
    grad.scatter_add_(1, target.unsqueeze(-1), mine.to(grad.scalar_type()).neg().unsqueeze(-1));
    grad.mul_(grad_out[0].unsqueeze(-1));
    const auto dtype = static_cast<at::ScalarType>(ctx->saved_data["dtype"].toInt());
    return {grad.to(dtype), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor vocab_parallel_cross_entropy(const at::Tensor& logits, const at::Tensor& targets,
                                        Communicator& tp, int64_t vocab_start, int64_t vocab) {
  return VocabParallelCrossEntropy::apply(logits, targets, reinterpret_cast<int64_t>(&tp),
                                          vocab_start, vocab);
}

}  // namespace trident
