// Llama (as Hugging Face's LlamaForCausalLM computes it: RMSNorm, RoPE, SwiGLU MLP,
// grouped-query attention, no biases) built from tensor-parallel layers and cut into
// pipeline stages like the GPT.
#pragma once
#include <torch/nn/module.h>  // torch::nn::Module

#include <memory>
#include <vector>

#include "models/kv_cache.h"     // KvCache, LayerKv
#include "models/llama_ops.h"    // RopeTables
#include "models/model_stage.h"  // ModelStage
#include "models/moe.h"          // MoeMlp, MoeOptions
#include "tensor_parallel/layers.h"
#include "tensor_parallel/parameter.h"

namespace trident {
class Communicator;

struct LlamaOptions {
  int64_t layers = 2;
  int64_t hidden = 64;
  int64_t heads = 4;
  int64_t kv_heads = 2;  // query head j reads kv head j / (heads / kv_heads)
  int64_t ffn_hidden = 128;
  int64_t vocab = 256;
  int64_t padded_vocab = 256;  // a multiple of tp; the padding takes no probability
  int64_t seq_len = 32;
  double rope_theta = 10000;
  double norm_eps = 1e-5;
  bool tie_embeddings = false;
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
  /// Mixture-of-Experts MLPs (moe.experts > 0) in the layers i with (i + 1) % moe_every == 0.
  MoeOptions moe;
  int64_t moe_every = 1;

  bool moe_layer(int64_t index) const { return moe.experts > 0 && (index + 1) % moe_every == 0; }

  int64_t head_dim() const { return hidden / heads; }
  /// tp ranks that hold the same kv heads: tp / kv_heads when tp exceeds kv_heads.
  int kv_replicas(int tp) const { return tp > kv_heads ? static_cast<int>(tp / kv_heads) : 1; }
};

/// Pre-norm block: h = x + o(attn(rope(q), rope(k), v)(norm_1(x))), then
/// h + down(silu(gate(m)) * up(m)) with m = norm_2(h). q, k, v, gate and up are
/// column-parallel (separate matrices, as Hugging Face stores them), o and down row-parallel.
class LlamaBlock : public torch::nn::Module {
 public:
  /// `ep`: the expert-parallel group of an MoE layer's experts, or null (MoeMlp).
  LlamaBlock(ParamRegistry& params, Communicator& tp, Communicator* ep, const LlamaOptions& o,
             int64_t index, const RopeTables& rope);
  /// x (B, T, C) replicated over tp -> (B, T, C); with sequence parallelism this rank's
  /// slice (B, T/tp, C) -> (B, T/tp, C). `loss_scale`, the objective's 1 / (tokens of the
  /// step), weighs an MoE layer's auxiliary losses (MoeMlp::forward). With `cache`
  /// (inference), x holds the tokens after the cached ones, which they attend to and join.
  at::Tensor forward(const at::Tensor& x, double loss_scale = 0.0, LayerKv* cache = nullptr);
  /// The MoE MLP of an MoE layer, else nullptr.
  MoeMlp* moe() { return moe_.get(); }

 private:
  /// (B, T, C) -> (B, T, C), or slices as forward.
  at::Tensor attention(const at::Tensor& x, LayerKv* cache);
  /// A norm weight as the block uses it: with sequence parallelism it meets only this
  /// rank's slice, so its gradient is summed over tp.
  at::Tensor replicated(const at::Tensor& w);
  Communicator& tp_;
  LlamaOptions o_;
  const RopeTables& rope_;
  int64_t local_heads_, local_kv_heads_;
  at::Tensor norm_1_weight_, norm_2_weight_;
  std::shared_ptr<ColumnParallelLinear> q_, k_, v_, gate_, up_;
  std::shared_ptr<RowParallelLinear> o_proj_, down_;
  std::shared_ptr<MoeMlp> moe_;  // instead of gate_, up_, down_ in an MoE layer
};

/// One pipeline stage of the Llama: blocks [stage*L/stages, (stage+1)*L/stages), the token
/// embedding on the first stage, the final norm, head and loss on the last. Tied: the head
/// is the embedding ("wte.weight", copied to the last stage as the GPT does); untied: the
/// embedding is "embed.weight" and the head "lm_head.weight", each on its own stage.
class LlamaStage : public ModelStage {
 public:
  /// `ep`: the expert-parallel group, or null for every expert on this rank.
  LlamaStage(const LlamaOptions& o, Communicator& tp, int stage, int stages,
             Communicator* ep = nullptr);

  at::Tensor forward(const at::Tensor& input, const at::Tensor& targets,
                     double loss_scale) override;
  at::Tensor decode(const at::Tensor& ids, KvCache& cache) override;

  const LlamaOptions& options() const { return o_; }
  void take_moe_statistics(std::map<int64_t, MoeLayerStats>& into) override;
  void set_router_bias(const std::map<int64_t, std::vector<double>>& bias) override;

 private:
  LlamaOptions o_;
  RopeTables rope_;                                // (seq_len, head_dim) each, shared by the blocks
  std::shared_ptr<VocabParallelEmbedding> embed_;  // first stage; the last when tied
  std::vector<std::shared_ptr<LlamaBlock>> blocks_;
  std::vector<int64_t> block_index_;  // each block's layer index in the whole model
  at::Tensor norm_f_weight_;
  at::Tensor lm_head_;  // untied head (V/tp, C), last stage
  int64_t head_vocab_start_ = 0;
};

}  // namespace trident
