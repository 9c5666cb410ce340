// GPT-2 (as Hugging Face's GPT2LMHeadModel computes it) built from tensor-parallel layers
// and cut into pipeline stages: a GptStage holds one stage's blocks, plus the embeddings on
// the first stage and the final norm, tied head and loss on the last.
#pragma once
#include <torch/nn/module.h>  // torch::nn::Module

#include <memory>
#include <vector>

#include "models/kv_cache.h"  // KvCache, LayerKv
#include "models/layer_scope.h"
#include "models/model_stage.h"  // ModelStage
#include "tensor_parallel/layers.h"
#include "tensor_parallel/parameter.h"

namespace trident {
class Communicator;

struct GptOptions {
  int64_t layers = 2;
  int64_t hidden = 64;
  int64_t heads = 4;
  int64_t vocab = 256;
  int64_t padded_vocab = 256;  // a multiple of tp; the padding takes no probability
  int64_t seq_len = 32;
  uint64_t seed = 1234;
  at::ScalarType dtype = at::kFloat;
  at::Device device = at::kCPU;  // train.device
  bool defer_init = false;       // parameters without values, for ZeRO stage 3 to draw
  /// Norms and the residual stream hold this tp rank's slice of the sequence.
  bool sequence_parallel = false;
  /// Recompute attention's core in backward instead of keeping it ("selective").
  bool recompute_attention = false;
  /// Context parallelism: the ranks splitting each sequence (null or a group of one: none).
  /// This rank holds its balanced chunks of every sequence (models/context_split.h), and
  /// attention meets the others' around a ring (models/ring_attention.h).
  Communicator* cp = nullptr;
  static constexpr double kLayerNormEps = 1e-5;
};

/// Pre-LayerNorm transformer block: x + attn(ln_1(x)), then + mlp(ln_2(x)).
class GptBlock : public torch::nn::Module {
 public:
  GptBlock(ParamRegistry& params, Communicator& tp, const GptOptions& o, int64_t index);
  /// x (B, T, C) replicated over tp -> (B, T, C); with sequence parallelism this rank's
  /// slice (B, T/tp, C) -> (B, T/tp, C). With `cache` (inference), x holds the tokens after
  /// the cached ones, which they attend to and join.
  at::Tensor forward(const at::Tensor& x, LayerKv* cache = nullptr);

 private:
  /// (B, T, C) -> (B, T, C), or slices as forward.
  at::Tensor attention(const at::Tensor& x, LayerKv* cache);
  /// A replicated parameter as the block uses it: with sequence parallelism it meets only
  /// this rank's slice, so its gradient is summed over tp.
  at::Tensor replicated(const at::Tensor& w);
  Communicator& tp_;
  GptOptions o_;
  int64_t local_heads_;
  at::Tensor ln_1_weight_, ln_1_bias_, ln_2_weight_, ln_2_bias_;
  std::shared_ptr<ColumnParallelLinear> qkv_, fc_;
  std::shared_ptr<RowParallelLinear> attn_proj_, mlp_proj_;
};

/// One pipeline stage of the GPT: stage `stage` of `stages` holds blocks
/// [stage*L/stages, (stage+1)*L/stages).
class GptStage : public ModelStage {
 public:
  GptStage(const GptOptions& o, Communicator& tp, int stage, int stages);

  at::Tensor forward(const at::Tensor& input, const at::Tensor& targets,
                     double loss_scale) override;
  at::Tensor decode(const at::Tensor& ids, KvCache& cache) override;

  const GptOptions& options() const { return o_; }

 private:
  GptOptions o_;
  at::Tensor positions_;                         // the original positions of this cp rank's tokens
  std::shared_ptr<VocabParallelEmbedding> wte_;  // first stage, and the last (tied head)
  at::Tensor wpe_;
  std::vector<std::shared_ptr<GptBlock>> blocks_;
  at::Tensor ln_f_weight_, ln_f_bias_;
};

}  // namespace trident
