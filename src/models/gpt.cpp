// GPT-2 forward pass over tensor-parallel layers.
#include "models/gpt.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>  // at::NoGradGuard
#include <c10/util/Exception.h>   // TORCH_CHECK

#include <cmath>
#include <vector>

#include "models/attention_core.h"
#include "models/context_split.h"   // context_positions, context_size
#include "models/ring_attention.h"  // ring_attention
#include "parallel/communicator.h"
#include "tensor_parallel/cross_entropy.h"
#include "tensor_parallel/mappings.h"
#include "tensor_parallel/sequence_mappings.h"

namespace trident {

namespace {

at::Tensor norm_param(ParamRegistry& params, const std::string& name, int64_t hidden,
                      InitKind init) {
  return params.create({name, {hidden}, ShardSpec{}, init});
}

}  // namespace

GptBlock::GptBlock(ParamRegistry& params, Communicator& tp, const GptOptions& o, int64_t index)
    : tp_(tp), o_(o), local_heads_(o.heads / tp.size()) {
  TORCH_CHECK(o.heads % tp.size() == 0, "model.heads = ", o.heads,
              " is not divisible by parallel.tp = ", tp.size());
  const std::string p = "h." + std::to_string(index) + ".";
  const int64_t c = o.hidden;
  // GPT-2: residual projections scaled by 1/sqrt(2 * layers).
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(o.layers));
  auto linear = [&o](int64_t in, int64_t out, double std, int fused_chunks = 1) {
    LinearOptions l{in, out, std, fused_chunks};
    l.sequence_parallel = o.sequence_parallel;
    return l;
  };
  ln_1_weight_ =
      register_parameter("ln_1_weight", norm_param(params, p + "ln_1.weight", c, InitKind::kOnes));
  ln_1_bias_ =
      register_parameter("ln_1_bias", norm_param(params, p + "ln_1.bias", c, InitKind::kZeros));
  qkv_ = register_module("qkv", std::make_shared<ColumnParallelLinear>(params, tp, p + "attn.qkv",
                                                                       linear(c, 3 * c, 0.02, 3)));
  attn_proj_ = register_module(
      "attn_proj",
      std::make_shared<RowParallelLinear>(params, tp, p + "attn.proj", linear(c, c, residual_std)));
  ln_2_weight_ =
      register_parameter("ln_2_weight", norm_param(params, p + "ln_2.weight", c, InitKind::kOnes));
  ln_2_bias_ =
      register_parameter("ln_2_bias", norm_param(params, p + "ln_2.bias", c, InitKind::kZeros));
  fc_ = register_module("fc", std::make_shared<ColumnParallelLinear>(params, tp, p + "mlp.fc",
                                                                     linear(c, 4 * c, 0.02)));
  mlp_proj_ =
      register_module("mlp_proj", std::make_shared<RowParallelLinear>(
                                      params, tp, p + "mlp.proj", linear(4 * c, c, residual_std)));
}

at::Tensor GptBlock::replicated(const at::Tensor& w) {
  return o_.sequence_parallel ? sum_grad_over_sequence(w, tp_) : w;
}

at::Tensor GptBlock::attention(const at::Tensor& x, LayerKv* cache) {
  const int64_t hd = o_.hidden / o_.heads;
  at::Tensor qkv = qkv_->forward(x);  // (B, T, 3C/tp), the whole sequence
  const int64_t B = qkv.size(0), T = qkv.size(1);
  // (B, T, 3C/tp) -> (3, B, nh/tp, T, hd): this rank's q heads, then k, then v.
  qkv = qkv.view({B, T, 3, local_heads_, hd}).permute({2, 0, 3, 1, 4});
  // unbind, not three selects: backward stacks the three gradients in one pass instead of
  // summing three zero-filled copies of the whole (3, B, nh/tp, T, hd) tensor.
  const std::vector<at::Tensor> h = qkv.unbind(0);
  at::Tensor y = cache ? cached_attention(h[0], h[1], h[2], *cache)
                 : context_size(o_.cp) > 1
                     ? ring_attention(h[0], h[1], h[2], *o_.cp)
                     : causal_attention(h[0], h[1], h[2], o_.recompute_attention);
  y = y.transpose(1, 2).reshape({B, T, local_heads_ * hd});  // (B, T, C/tp)
  return attn_proj_->forward(y);
}

at::Tensor GptBlock::forward(const at::Tensor& x, LayerKv* cache) {
  const double eps = GptOptions::kLayerNormEps;
  at::Tensor h = x + attention(at::layer_norm(x, {o_.hidden}, replicated(ln_1_weight_),
                                              replicated(ln_1_bias_), eps),
                               cache);
  at::Tensor m =
      at::layer_norm(h, {o_.hidden}, replicated(ln_2_weight_), replicated(ln_2_bias_), eps);
  return h + mlp_proj_->forward(at::gelu(fc_->forward(m), "tanh"));
}

GptStage::GptStage(const GptOptions& o, Communicator& tp, int stage, int stages)
    : ModelStage(StageDims{o.hidden, o.vocab, o.seq_len, o.dtype,
                           o.sequence_parallel ? tp.size() : 1, context_size(o.cp), o.device},
                 o.seed, tp, stage, stages),
      o_(o),
      positions_(context_positions(o.seq_len, context_rank(o.cp), context_size(o.cp), o.device)) {
  TORCH_CHECK(o.layers % stages == 0, "model.layers = ", o.layers,
              " is not divisible by parallel.pp = ", stages);
  TORCH_CHECK(o.padded_vocab % tp.size() == 0, "padded vocabulary ", o.padded_vocab,
              " is not divisible by tp = ", tp.size());
  if (o.defer_init) params_.defer_init();
  // Each layer's parameters are the registry entries its construction adds (add_unit).
  if (is_first()) {
    wte_ = register_module("wte", std::make_shared<VocabParallelEmbedding>(
                                      params_, tp, "wte", o.vocab, o.padded_vocab, o.hidden,
                                      /*tied_copy=*/false, o.sequence_parallel));
    wpe_ = register_parameter("wpe", params_.create({"wpe.weight",
                                                     {o.seq_len, o.hidden},
                                                     ShardSpec{},
                                                     InitKind::kNormal,
                                                     0.02,
                                                     -1,
                                                     /*weight_decay=*/true}));
    add_unit(0);
  }
  const int64_t per_stage = o.layers / stages;
  auto h = register_module("h", std::make_shared<torch::nn::Module>());
  for (int64_t i = stage * per_stage; i < (stage + 1) * per_stage; ++i) {
    const size_t first = params_.params().size();
    blocks_.push_back(std::make_shared<GptBlock>(params_, tp, o, i));
    add_unit(first);
    h->register_module(std::to_string(i), blocks_.back());
  }
  if (is_last()) {
    const size_t first = params_.params().size();
    ln_f_weight_ = register_parameter(
        "ln_f_weight", norm_param(params_, "ln_f.weight", o.hidden, InitKind::kOnes));
    ln_f_bias_ = register_parameter("ln_f_bias",
                                    norm_param(params_, "ln_f.bias", o.hidden, InitKind::kZeros));
    if (!is_first()) {
      // The head's copy of the token embedding: the same layout-free init, and its
      // gradient is summed with the first stage's over the embedding group.
      wte_ = register_module("wte", std::make_shared<VocabParallelEmbedding>(
                                        params_, tp, "wte", o.vocab, o.padded_vocab, o.hidden,
                                        /*tied_copy=*/true));
    }
    add_unit(first);
    if (is_first()) units_.back().push_back(0);  // the head reads the embedding itself
  }
}

at::Tensor GptStage::forward(const at::Tensor& input, const at::Tensor& targets,
                             double loss_scale) {
  int unit = 0;
  at::Tensor x = input;
  const bool sp = o_.sequence_parallel;
  // A replicated parameter that meets only this rank's slice of the sequence.
  auto replicated = [this, sp](const at::Tensor& w) {
    return sp ? sum_grad_over_sequence(w, tp_) : w;
  };
  if (is_first()) {
    x = run_layer(scope_, unit++, input, [&](const at::Tensor& ids) {
      // Sequence parallel: the embedding's sum over tp arrives as this rank's slice of the
      // sequence, and the slice's positions are added to it.
      const int64_t n = ids.size(1) / (sp ? tp_.size() : 1);
      const int64_t first = sp ? tp_.rank() * n : 0;
      // With the head on this stage too, the lookup's gradient may leave as rows.
      RowGradSink* sink = is_last() ? row_sink_ : nullptr;
      // Context parallel: the tokens' original positions, not their places on this rank.
      const at::Tensor positions =
          context_size(o_.cp) > 1 ? replicated(wpe_).index_select(0, positions_.narrow(0, first, n))
                                  : replicated(wpe_).narrow(0, first, n);
      return wte_->forward(ids, sink) + positions;  // (B, n, C)
    });
  }
  for (auto& block : blocks_)
    x = run_layer(
        scope_, unit++, x, [&block](const at::Tensor& h) { return block->forward(h); },
        layer_recompute_);
  if (!is_last()) return x;

  // The head is recomputed like a block unless it reads the embedding this stage's first
  // unit reads too (pp = 1): a separate backward would then hand the embedding its
  // gradient in two parts, and ZeRO reduces a gradient once it arrives.
  // What the head uses is captured by value: a recomputation runs after this call returns.
  auto head = [this, targets, loss_scale, sp, replicated](const at::Tensor& h) {
    at::Tensor n = at::layer_norm(h, {o_.hidden}, replicated(ln_f_weight_), replicated(ln_f_bias_),
                                  GptOptions::kLayerNormEps);
    // The head reads the whole sequence: gathered from the slices under sequence parallelism.
    n = sp ? gather_from_sequence_region(n, tp_) : copy_to_tp_region(n, tp_);  // (B, T, C)
    const int64_t B = n.size(0), T = n.size(1);
    // Tied head on this rank's vocabulary slice: (B*T, C) x (V/tp, C)^T -> (B*T, V/tp).
    at::Tensor logits = at::matmul(n.reshape({B * T, o_.hidden}), wte_->weight().t());
    at::Tensor losses = vocab_parallel_cross_entropy(
        logits, targets.reshape({B * T}), tp_, wte_->vocab_start(), o_.vocab, reentrant_backward_);
    return losses.sum() * loss_scale;
  };
  return run_layer(scope_, unit, x, head, layer_recompute_ && !is_first());
}

at::Tensor GptStage::decode(const at::Tensor& ids, KvCache& cache) {
  check_decodable();
  at::NoGradGuard no_grad;
  const int64_t past = cache.length, n = ids.size(1);
  TORCH_CHECK(past + n <= o_.seq_len, "decode: positions up to ", past + n, " exceed the model's ",
              o_.seq_len, " (model.seq_len)");
  cache.layers.resize(blocks_.size());
  at::Tensor x = wte_->forward(ids) + wpe_.narrow(0, past, n);  // (B, n, C)
  for (size_t b = 0; b < blocks_.size(); ++b) x = blocks_[b]->forward(x, &cache.layers[b]);
  cache.length = past + n;
  at::Tensor normed =
      at::layer_norm(x, {o_.hidden}, ln_f_weight_, ln_f_bias_, GptOptions::kLayerNormEps);
  return at::matmul(normed, wte_->weight().t());  // (B, n, V/tp), tied head
}

}  // namespace trident
