// Forward passes of the tensor-parallel layers; their backward comes from autograd through
// the tp-region mappings.
#include "tensor_parallel/layers.h"

#include <ATen/ATen.h>

#include "parallel/communicator.h"
#include "tensor_parallel/mappings.h"
#include "tensor_parallel/row_grad_sink.h"  // embedding_with_row_grads
#include "tensor_parallel/sequence_linear.h"
#include "tensor_parallel/sequence_mappings.h"

namespace trident {

ColumnParallelLinear::ColumnParallelLinear(ParamRegistry& params, Communicator& tp,
                                           const std::string& name, const LinearOptions& o)
    : tp_(tp), replicas_(o.replicas), sequence_parallel_(o.sequence_parallel && tp.size() > 1) {
  const ShardSpec split{0, o.fused_chunks, o.replicas};
  ParamSpec weight{name + ".weight",     {o.out, o.in}, split, InitKind::kNormal, o.init_std, -1,
                   /*weight_decay=*/true};
  weight.expert = o.expert;
  weight_ = register_parameter("weight", params.create(weight));
  if (o.bias)
    bias_ = register_parameter("bias",
                               params.create({name + ".bias", {o.out}, split, InitKind::kZeros}));
}

at::Tensor ColumnParallelLinear::forward(const at::Tensor& x) {
  if (sequence_parallel_)
    return sequence_gathered_linear(x, reduce_grad_over_replicas(weight_, tp_, replicas_), bias_,
                                    tp_);
  return at::linear(copy_to_tp_region(x, tp_), reduce_grad_over_replicas(weight_, tp_, replicas_),
                    bias_);
}

RowParallelLinear::RowParallelLinear(ParamRegistry& params, Communicator& tp,
                                     const std::string& name, const LinearOptions& o)
    : tp_(tp), sequence_parallel_(o.sequence_parallel && tp.size() > 1) {
  ParamSpec weight{name + ".weight",     {o.out, o.in}, ShardSpec{1, 1},
                   InitKind::kNormal,    o.init_std,    -1,
                   /*weight_decay=*/true};
  weight.expert = o.expert;
  weight_ = register_parameter("weight", params.create(weight));
  if (o.bias)
    bias_ = register_parameter(
        "bias", params.create({name + ".bias", {o.out}, ShardSpec{}, InitKind::kZeros}));
}

at::Tensor RowParallelLinear::forward(const at::Tensor& x) {
  // The bias is added once, after the partial products are summed over tp; without tp
  // the matmul adds it itself.
  if (tp_.size() == 1) return at::linear(x, weight_, bias_);
  if (sequence_parallel_) {
    // The bias meets only this rank's slice of the sequence: its gradient is summed over tp.
    at::Tensor y = reduce_scatter_to_sequence_region(at::linear(x, weight_), tp_);
    return bias_.defined() ? y + sum_grad_over_sequence(bias_, tp_) : y;
  }
  at::Tensor y = reduce_from_tp_region(at::linear(x, weight_), tp_);
  return bias_.defined() ? y + bias_ : y;
}

VocabParallelEmbedding::VocabParallelEmbedding(ParamRegistry& params, Communicator& tp,
                                               const std::string& name, int64_t vocab,
                                               int64_t padded_vocab, int64_t hidden, bool tied_copy,
                                               bool sequence_parallel)
    : tp_(tp), sequence_parallel_(sequence_parallel && tp.size() > 1) {
  ParamSpec spec{name + ".weight",
                 {padded_vocab, hidden},
                 ShardSpec{0, 1},
                 InitKind::kNormal,
                 0.02,
                 vocab,
                 /*weight_decay=*/true,
                 tied_copy};
  weight_ = register_parameter("weight", params.create(spec));
  vocab_start_ = tp.rank() * (padded_vocab / tp.size());
  anchor_ = at::zeros({}, weight_.options().dtype(at::kFloat)).requires_grad_(true);
}

at::Tensor VocabParallelEmbedding::forward(const at::Tensor& ids, RowGradSink* sink) {
  auto lookup = [&](const at::Tensor& local) {
    if (sink == nullptr) return at::embedding(weight_, local);
    return embedding_with_row_grads(weight_, local, anchor_, *sink);
  };
  if (tp_.size() == 1) return lookup(ids);
  const int64_t rows = weight_.size(0);
  at::Tensor local = ids - vocab_start_;
  at::Tensor outside = (local < 0).logical_or(local >= rows);  // (B, T)
  // Outside ids look up row 0; their gradient is masked to zero below.
  at::Tensor emb = lookup(local.masked_fill(outside, 0));
  emb = emb.masked_fill(outside.unsqueeze(-1), 0.0);
  return sequence_parallel_ ? reduce_scatter_to_sequence_region(emb, tp_)
                            : reduce_from_tp_region(emb, tp_);
}

}  // namespace trident
