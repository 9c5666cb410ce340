// Megatron-style tensor-parallel layers: column-parallel and row-parallel linear layers
// and the vocabulary-parallel embedding. Each creates its layout-free parameters through a
// ParamRegistry and communicates over the tp group it is given.
#pragma once
#include <torch/nn/module.h>  // torch::nn::Module

#include <string>

#include "tensor_parallel/parameter.h"

namespace trident {
class Communicator;
class RowGradSink;

struct LinearOptions {
  int64_t in = 0;
  int64_t out = 0;
  double init_std = 0.02;  // of the weight; biases start at zero
  int fused_chunks = 1;    // column-parallel only: QKV is 3 blocks split separately
  bool bias = true;        // Llama's projections have none
  int replicas = 1;        // column-parallel only: tp ranks sharing a shard (kv heads)
  /// Sequence parallelism: a column-parallel layer takes (and keeps for backward) this
  /// rank's slice of the sequence and gathers the rest; a row-parallel layer
  /// reduce-scatters its output to slices of the sequence instead of all-reducing it.
  bool sequence_parallel = false;
  bool expert = false;  // a routed expert's layer (ParamSpec::expert)
};

/// y = x W^T + b with W's output dimension split over tp: each rank computes out/tp
/// features of the full input. Weight (out/tp, in), bias (out/tp). With `replicas` > 1,
/// groups of that many ranks compute the same out*replicas/tp features, and the weight's
/// gradient is summed over each group.
class ColumnParallelLinear : public torch::nn::Module {
 public:
  ColumnParallelLinear(ParamRegistry& params, Communicator& tp, const std::string& name,
                       const LinearOptions& options);
  /// x (..., in) replicated over tp -> (..., out * replicas / tp); with sequence
  /// parallelism x (B, T/tp, in), this rank's slice of the sequence -> (B, T, out*replicas/tp).
  at::Tensor forward(const at::Tensor& x);

 private:
  Communicator& tp_;
  int replicas_;
  bool sequence_parallel_;
  at::Tensor weight_, bias_;  // bias_ undefined without a bias
};

/// y = x W^T + b with W's input dimension split over tp: each rank holds in/tp inputs and
/// its partial outputs are summed over tp. Weight (out, in/tp); the bias (out) is
/// replicated and added once after the sum (none with `bias` false).
class RowParallelLinear : public torch::nn::Module {
 public:
  RowParallelLinear(ParamRegistry& params, Communicator& tp, const std::string& name,
                    const LinearOptions& options);
  /// x (..., in/tp) -> (..., out) replicated over tp; with sequence parallelism
  /// x (B, T, in/tp) -> (B, T/tp, out), this rank's slice of the sequence.
  at::Tensor forward(const at::Tensor& x);

 private:
  Communicator& tp_;
  bool sequence_parallel_;
  at::Tensor weight_, bias_;
};

/// Token embedding with the (padded) vocabulary split over tp: rank r holds rows
/// [r*V/tp, (r+1)*V/tp); a token outside them contributes zero and the sum over tp
/// gives every rank the full embedding. Rows at and beyond `vocab` (padding) are zero.
class VocabParallelEmbedding : public torch::nn::Module {
 public:
  VocabParallelEmbedding(ParamRegistry& params, Communicator& tp, const std::string& name,
                         int64_t vocab, int64_t padded_vocab, int64_t hidden, bool tied_copy,
                         bool sequence_parallel = false);
  /// ids (B, T) int64 -> (B, T, hidden) replicated over tp; with sequence parallelism the
  /// sum over tp is reduce-scattered: -> (B, T/tp, hidden), this rank's slice. With a
  /// `sink`, the weight's gradient from this lookup goes there as rows (row_grad_sink.h).
  at::Tensor forward(const at::Tensor& ids, RowGradSink* sink = nullptr);
  /// The local (V/tp, hidden) weight, for the tied output head.
  const at::Tensor& weight() const { return weight_; }
  int64_t vocab_start() const { return vocab_start_; }

 private:
  Communicator& tp_;
  bool sequence_parallel_;
  at::Tensor weight_;
  at::Tensor anchor_;  // puts a lookup with a row-gradient sink into the graph
  int64_t vocab_start_ = 0;
};

}  // namespace trident
