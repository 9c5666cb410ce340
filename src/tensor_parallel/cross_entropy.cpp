// The vocab-parallel cross-entropy as one autograd function with a closed-form backward:
// d loss / d logits = softmax - one_hot(target), each rank for its own columns.
#include "tensor_parallel/cross_entropy.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>  // torch::autograd::Function

#include <algorithm>  // std::max, std::min
#include <limits>     // std::numeric_limits
#include <tuple>      // std::tie
#include <utility>    // std::pair

#include "parallel/communicator.h"

namespace trident {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// Rows of logits a softmax block holds: about kBlockBytes of them, so that a block and its
/// output stay in the last-level cache between the softmax's passes.
constexpr int64_t kBlockBytes = int64_t{4} << 20;

/// out = exp(logits - max) (N, V), max (N): the softmax's numerators.
void softmax_numerators(const at::Tensor& logits, const at::Tensor& max, at::Tensor& out) {
  at::sub_out(out, logits, max.unsqueeze(-1));
  out.exp_();
}

/// The softmax of logits (N, V) into out (N, V), a block of rows at a time, with the same
/// operations per row as over all rows at once: returns each row's max and sum of
/// exponentials (N).
std::pair<at::Tensor, at::Tensor> softmax_in_blocks(const at::Tensor& logits, at::Tensor out) {
  const int64_t n = logits.size(0), v = logits.size(1);
  const int64_t row_bytes = std::max<int64_t>(1, v * static_cast<int64_t>(logits.element_size()));
  // An even number of rows: a block's elementwise passes split between two threads at a
  // row's end, as they do over all rows.
  const int64_t rows = std::max<int64_t>(2, kBlockBytes / row_bytes / 2 * 2);
  at::Tensor max = at::empty({n}, logits.options()), sum_exp = at::empty({n}, logits.options());
  at::Tensor where = at::empty({std::min(rows, n)}, logits.options().dtype(at::kLong));
  for (int64_t r = 0; r < n; r += rows) {
    const int64_t k = std::min(rows, n - r);
    const at::Tensor block = logits.narrow(0, r, k);
    at::Tensor m = max.narrow(0, r, k), s = sum_exp.narrow(0, r, k), p = out.narrow(0, r, k);
    at::Tensor at_max = where.narrow(0, 0, k);  // the max's column, unused
    at::max_out(m, at_max, block, -1);
    softmax_numerators(block, m, p);
    at::sum_out(s, p, {-1});
    p.div_(s.unsqueeze(-1));
  }
  return {max, sum_exp};
}

struct VocabParallelCrossEntropy : torch::autograd::Function<VocabParallelCrossEntropy> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& logits_in,
                            const at::Tensor& targets, int64_t comm_ptr, int64_t vocab_start,
                            int64_t vocab, bool reentrant) {
    Communicator& tp = *reinterpret_cast<Communicator*>(comm_ptr);
    // Reductions in at least float32: bf16 logits are upcast here.
    const at::ScalarType dtype = logits_in.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
    const at::Tensor logits = logits_in.to(dtype);  // (N, Vl)
    const int64_t n = logits.size(0), local_vocab = logits.size(1);
    // Padding columns on this rank take no part: the softmax is computed over the real
    // columns only, into a buffer whose padding columns are zero (their probability).
    const int64_t real = std::max<int64_t>(0, std::min(local_vocab, vocab - vocab_start));
    const at::Tensor valid = logits.narrow(1, 0, real);
    at::Tensor probs = at::empty({n, local_vocab}, logits.options());  // becomes the softmax
    if (real < local_vocab) probs.narrow(1, real, local_vocab - real).zero_();
    at::Tensor max, sum_exp;
    if (tp.size() == 1 && real > 0) {
      // Nothing to agree on with other ranks: the softmax goes a block of rows at a time,
      // so that its passes after the first read the block from cache, not from memory.
      std::tie(max, sum_exp) = softmax_in_blocks(valid, probs.narrow(1, 0, real));
    } else {
      // (A rank may hold padding only, when the padding exceeds its share of the columns.)
      max = real > 0 ? std::get<0>(valid.max(-1)).contiguous()
                     : at::full({n}, -std::numeric_limits<double>::infinity(),
                                logits.options());  // (N)
      if (tp.size() > 1) tp.all_reduce(max, ReduceOp::kMax)->wait();
    }

    at::Tensor local_target = targets - vocab_start;
    at::Tensor mine = (local_target >= 0).logical_and(local_target < real);  // (N)
    at::Tensor safe_target = local_target.masked_fill(mine.logical_not(), 0);
    at::Tensor picked = real > 0 ? (valid.gather(1, safe_target.unsqueeze(-1)).squeeze(-1) - max)
                                       .masked_fill(mine.logical_not(), 0.0)
                                       .contiguous()
                                 : at::zeros({n}, logits.options());  // (N)

    if (!sum_exp.defined()) {
      at::Tensor shifted = probs.narrow(1, 0, real);
      softmax_numerators(valid, max, shifted);
      sum_exp = shifted.sum(-1).contiguous();  // (N)
      if (tp.size() > 1) {
        auto a = tp.all_reduce(sum_exp);
        auto b = tp.all_reduce(picked);
        a->wait();
        b->wait();
      }
      shifted.div_(sum_exp.unsqueeze(-1));
    }
    // A negative target is left out: no loss, no gradient (a mask of N bools, applied
    // whether or not any is set, so that nothing waits on the device to ask).
    const at::Tensor left_out = targets.lt(0);
    ctx->save_for_backward({probs, safe_target, mine, left_out});
    ctx->saved_data["dtype"] = static_cast<int64_t>(logits_in.scalar_type());
    ctx->saved_data["reentrant"] = reentrant;
    return (sum_exp.log() - picked).masked_fill(left_out, 0.0);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    auto saved = ctx->get_saved_variables();
    // The saved softmax becomes the gradient in place when the graph's backward runs once
    // (a copy would cost one more pass over the logits, the largest activation of the
    // model); a graph retained for a second backward keeps it intact.
    at::Tensor grad = saved[0];  // softmax (N, Vl)
    if (ctx->saved_data["reentrant"].toBool()) grad = grad.clone();
    const at::Tensor& target = saved[1];
    const at::Tensor& mine = saved[2];
    const at::Tensor& left_out = saved[3];
    grad.scatter_add_(1, target.unsqueeze(-1), mine.to(grad.scalar_type()).neg().unsqueeze(-1));
    grad.mul_(grad_out[0].masked_fill(left_out, 0.0).unsqueeze(-1));
    const auto dtype = static_cast<at::ScalarType>(ctx->saved_data["dtype"].toInt());
    return {grad.to(dtype), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor vocab_parallel_cross_entropy(const at::Tensor& logits, const at::Tensor& targets,
                                        Communicator& tp, int64_t vocab_start, int64_t vocab,
                                        bool reentrant) {
  return VocabParallelCrossEntropy::apply(logits, targets, reinterpret_cast<int64_t>(&tp),
                                          vocab_start, vocab, reentrant);
}

}  // namespace trident
