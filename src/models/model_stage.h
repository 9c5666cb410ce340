// What the pipeline runtime, ZeRO, evaluation and checkpoints need of a model family: one
// pipeline stage of the model, its layout-free parameters, and the shape of what it
// passes between stages. GptStage and LlamaStage implement it.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor
#include <torch/nn/module.h>   // torch::nn::Module

#include <cstdint>
#include <map>
#include <vector>

#include "models/kv_cache.h"            // KvCache
#include "models/layer_scope.h"         // LayerScope
#include "models/moe_stats.h"           // MoeLayerStats
#include "tensor_parallel/parameter.h"  // ParamRegistry

namespace trident {
class RowGradSink;
}

namespace trident {
class Communicator;

/// The sizes every model family shares, as users outside the model read them.
struct StageDims {
  int64_t hidden = 0;   // the activations' last dimension
  int64_t vocab = 0;    // valid token ids are [0, vocab)
  int64_t seq_len = 0;  // the longest sequence the model takes
  at::ScalarType dtype = at::kFloat;
  /// Sequence parallelism: the activations between layers and stages are this many
  /// slices of the sequence, one per tp rank (1 without it).
  int64_t sequence_shards = 1;
  /// Context parallelism: each rank holds 1 / context_shards of every sequence's tokens
  /// (models/context_split.h), which sequence parallelism splits further.
  int64_t context_shards = 1;
  /// Where the parameters and activations live (train.device).
  at::Device device = at::kCPU;
};

/// One pipeline stage of a model: stage `stage` of `stages` holds its share of the blocks,
/// plus the embedding on the first stage and the final norm, head and loss on the last.
class ModelStage : public torch::nn::Module {
 public:
  ModelStage(const StageDims& dims, uint64_t seed, Communicator& tp, int stage, int stages);
  ~ModelStage() override = default;

  bool is_first() const { return stage_ == 0; }
  bool is_last() const { return stage_ == stages_ - 1; }

  /// First stage: `input` is token ids (B, T) int64; otherwise the previous stage's
  /// activations (B, T, C) (with sequence parallelism (B, T/tp, C), this tp rank's slice).
  /// Returns the activations in the same shape for the next stage, or, on
  /// the last stage, the scalar sum of the per-token losses times `loss_scale` (one over
  /// the global batch's token count, so that summing over micro-batches and dp ranks
  /// gives the global mean).
  virtual at::Tensor forward(const at::Tensor& input, const at::Tensor& targets,
                             double loss_scale) = 0;

  /// Inference, on a stage that holds the whole model (pp = 1) with whole sequences (no
  /// sequence or context parallelism), without gradients: the logits of this tp rank's
  /// vocabulary slice, (B, n, padded_vocab/tp), for `ids` (B, n), the tokens at positions
  /// [cache.length, cache.length + n); they attend to the cached tokens and join the cache.
  /// Rank r's slice is rows [r * padded_vocab/tp, (r + 1) * padded_vocab/tp).
  virtual at::Tensor decode(const at::Tensor& ids, KvCache& cache);

  /// The shape of the activations this stage receives or sends for a micro-batch: this
  /// cp rank's tokens, with sequence parallelism this tp rank's slice of them.
  std::vector<int64_t> activation_shape(int64_t micro_batch_size) const {
    return {micro_batch_size, dims_.seq_len / dims_.context_shards / dims_.sequence_shards,
            dims_.hidden};
  }

  /// Adds the statistics of this stage's MoE layers since the last call to `into`, by
  /// layer index, and starts them afresh (MoeMlp::take_statistics); none in a dense model.
  virtual void take_moe_statistics(std::map<int64_t, MoeLayerStats>& into) { (void)into; }
  /// The sigmoid router's per-expert biases of every MoE layer, by layer index (each stage
  /// takes its own layers'); nothing in a dense model or with the softmax router.
  virtual void set_router_bias(const std::map<int64_t, std::vector<double>>& bias) { (void)bias; }

  /// Model chunks this stage holds (interleaved 1F1B's virtual stages); 1 for a plain stage.
  virtual int num_chunks() const { return 1; }
  /// Chunk c (0 <= c < num_chunks()): the stage of the virtual pipeline that the schedule's
  /// instructions of chunk c run. A plain stage is its own chunk 0.
  virtual ModelStage& chunk(int c) {
    (void)c;
    return *this;
  }

  /// This stage's parameters (its tp shard), in construction order.
  ParamRegistry& params() { return params_; }
  const StageDims& dims() const { return dims_; }

  /// The stage's layers in forward order (the first stage's embedding, each block, the last
  /// stage's final norm and head), each as the indices into params().params() of the
  /// parameters it reads: the units ZeRO stage 3 gathers and releases.
  const std::vector<std::vector<size_t>>& layer_units() const { return units_; }
  /// Reports every layer's forward and backward to `scope` (nullptr: to no one).
  void set_layer_scope(LayerScope* scope) { scope_ = scope; }
  /// Where a stage that holds both ends of a tied embedding (pp = 1) sends the lookup's
  /// share of the embedding's gradient, as rows (nullptr: into the dense gradient). The
  /// dense gradient then holds the head's share alone, which is final early in backward.
  void set_row_grad_sink(RowGradSink* sink) { row_sink_ = sink; }
  /// Whether a graph's backward may run twice (a zero-bubble schedule's input half, then
  /// its weight half, over one retained graph): the loss then keeps what it saved intact.
  void set_reentrant_backward(bool on) { reentrant_backward_ = on; }
  /// Full activation checkpointing, layer by layer: each block keeps only its input and
  /// rebuilds its graph in its own backward (run_layer's `recompute`), so that a backward
  /// holds one block's activations at a time, not the stage's.
  void set_layer_recompute(bool on) { layer_recompute_ = on; }

 protected:
  /// Throws unless this stage can decode (decode's conditions).
  void check_decodable() const;

  /// Closes a layer: its parameters are the registry entries from `first` on.
  void add_unit(size_t first) {
    std::vector<size_t> unit;
    for (size_t i = first; i < params_.params().size(); ++i) unit.push_back(i);
    units_.push_back(unit);
  }

  Communicator& tp_;
  int stage_, stages_;
  ParamRegistry params_;
  std::vector<std::vector<size_t>> units_;
  LayerScope* scope_ = nullptr;
  RowGradSink* row_sink_ = nullptr;
  bool reentrant_backward_ = false;
  bool layer_recompute_ = false;

 private:
  StageDims dims_;
};

}  // namespace trident
