// The autograd function of an embedding lookup whose weight gradient leaves as rows.
#include "tensor_parallel/row_grad_sink.h"

#include <ATen/ATen.h>       // at::embedding
#include <torch/autograd.h>  // torch::autograd::Function, AutogradContext

namespace trident {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct EmbeddingWithRowGrads : torch::autograd::Function<EmbeddingWithRowGrads> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& anchor,
                            const at::Tensor& weight, const at::Tensor& ids, int64_t sink) {
    (void)anchor;
    ctx->saved_data["sink"] = sink;
    ctx->saved_data["ids"] = ids;
    ctx->saved_data["hidden"] = weight.size(1);
    return at::embedding(weight, ids);  // (B, T, C)
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RowGradSink& sink = *reinterpret_cast<RowGradSink*>(ctx->saved_data["sink"].toInt());
    const int64_t hidden = ctx->saved_data["hidden"].toInt();
    const at::Tensor ids = ctx->saved_data["ids"].toTensor().reshape({-1});  // (N)
    sink.add_rows(ids, grads[0].reshape({-1, hidden}).contiguous());         // (N, C)
    return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor embedding_with_row_grads(const at::Tensor& weight, const at::Tensor& ids,
                                    const at::Tensor& anchor, RowGradSink& sink) {
  // The weight goes in detached: no edge to its AccumulateGrad from this lookup.
  return EmbeddingWithRowGrads::apply(anchor, weight.detach(), ids,
                                      reinterpret_cast<int64_t>(&sink));
}

}  // namespace trident
