// Llama forward pass over tensor-parallel layers.
#include "models/llama.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>  // at::NoGradGuard
#include <c10/util/Exception.h>   // TORCH_CHECK

#include <cmath>

#include "models/attention_core.h"
#include "models/context_split.h"   // context_positions, context_size
#include "models/ring_attention.h"  // ring_attention
#include "parallel/communicator.h"
#include "tensor_parallel/cross_entropy.h"
#include "tensor_parallel/mappings.h"
#include "tensor_parallel/sequence_mappings.h"

namespace trident {

namespace {

// Hugging Face's LlamaPreTrainedModel initialises every matrix with N(0, 0.02).
constexpr double kInitStd = 0.02;

at::Tensor norm_param(ParamRegistry& params, const std::string& name, int64_t hidden) {
  return params.create({name, {hidden}, ShardSpec{}, InitKind::kOnes});
}

LinearOptions no_bias(bool sequence_parallel, int64_t in, int64_t out, int replicas = 1) {
  LinearOptions o{in, out, kInitStd};
  o.bias = false;
  o.replicas = replicas;
  o.sequence_parallel = sequence_parallel;
  return o;
}

/// The MoE layer's options, with the ranks that hold the rest of each sequence.
MoeOptions moe_options(const LlamaOptions& o) {
  MoeOptions m = o.moe;
  m.cp = o.cp;
  return m;
}

}  // namespace

LlamaBlock::LlamaBlock(ParamRegistry& params, Communicator& tp, Communicator* ep,
                       const LlamaOptions& o, int64_t index, const RopeTables& rope)
    : tp_(tp), o_(o), rope_(rope) {
  const int t = tp.size();
  TORCH_CHECK(
      o.heads % t == 0 && o.heads % o.kv_heads == 0 && (o.kv_heads % t == 0 || t % o.kv_heads == 0),
      "llama: heads = ", o.heads, ", kv_heads = ", o.kv_heads, " do not split over tp = ", t);
  const int replicas = o.kv_replicas(t);
  local_heads_ = o.heads / t;
  local_kv_heads_ = o.kv_heads * replicas / t;
  const std::string p = "h." + std::to_string(index) + ".";
  const int64_t c = o.hidden, hd = o.head_dim();
  const bool sp = o.sequence_parallel;
  norm_1_weight_ = register_parameter("norm_1_weight", norm_param(params, p + "norm_1.weight", c));
  q_ = register_module("q", std::make_shared<ColumnParallelLinear>(params, tp, p + "attn.q",
                                                                   no_bias(sp, c, o.heads * hd)));
  k_ = register_module(
      "k", std::make_shared<ColumnParallelLinear>(params, tp, p + "attn.k",
                                                  no_bias(sp, c, o.kv_heads * hd, replicas)));
  v_ = register_module(
      "v", std::make_shared<ColumnParallelLinear>(params, tp, p + "attn.v",
                                                  no_bias(sp, c, o.kv_heads * hd, replicas)));
  o_proj_ = register_module("o", std::make_shared<RowParallelLinear>(params, tp, p + "attn.o",
                                                                     no_bias(sp, o.heads * hd, c)));
  norm_2_weight_ = register_parameter("norm_2_weight", norm_param(params, p + "norm_2.weight", c));
  if (o.moe_layer(index)) {
    moe_ = register_module(
        "moe", std::make_shared<MoeMlp>(params, tp, ep, p + "moe.", c, moe_options(o), kInitStd));
    return;
  }
  gate_ = register_module("gate", std::make_shared<ColumnParallelLinear>(
                                      params, tp, p + "mlp.gate", no_bias(sp, c, o.ffn_hidden)));
  up_ = register_module("up", std::make_shared<ColumnParallelLinear>(params, tp, p + "mlp.up",
                                                                     no_bias(sp, c, o.ffn_hidden)));
  down_ = register_module("down", std::make_shared<RowParallelLinear>(
                                      params, tp, p + "mlp.down", no_bias(sp, o.ffn_hidden, c)));
}

at::Tensor LlamaBlock::replicated(const at::Tensor& w) {
  return o_.sequence_parallel ? sum_grad_over_sequence(w, tp_) : w;
}

at::Tensor LlamaBlock::attention(const at::Tensor& x, LayerKv* cache) {
  at::Tensor q = q_->forward(x);  // (B, T, H/tp * hd), the whole sequence
  const int64_t B = q.size(0), T = q.size(1), hd = o_.head_dim();
  q = q.view({B, T, local_heads_, hd}).transpose(1, 2);  // (B, H/tp, T, hd)
  at::Tensor k =
      k_->forward(x).view({B, T, local_kv_heads_, hd}).transpose(1, 2);  // (B, KVl, T, hd)
  at::Tensor v = v_->forward(x).view({B, T, local_kv_heads_, hd}).transpose(1, 2);
  // After a cache, the tokens' positions start at its length.
  const int64_t past = cache ? cache->length() : 0;
  const RopeTables rope =
      past == 0 ? rope_ : RopeTables{rope_.cos.narrow(0, past, T), rope_.sin.narrow(0, past, T)};
  q = apply_rope(q, rope);
  k = apply_rope(k, rope);
  // This rank's query heads are consecutive and so are its kv heads: local query head i
  // reads local kv head i / group, as global head j reads kv head j / (heads / kv_heads).
  at::Tensor y;  // (B, H/tp, T, hd)
  if (cache) {
    y = cached_attention(q, k, v, *cache, local_heads_ / local_kv_heads_);
  } else if (context_size(o_.cp) > 1) {
    // Only the kv heads travel around the ring; each is repeated to its group there.
    y = ring_attention(q, k, v, *o_.cp);
  } else {
    const int64_t group = local_heads_ / local_kv_heads_;
    if (group > 1) {
      k = k.repeat_interleave(group, 1);  // (B, H/tp, T, hd)
      v = v.repeat_interleave(group, 1);
    }
    y = causal_attention(q, k, v, o_.recompute_attention);
  }
  y = y.transpose(1, 2).reshape({B, T, local_heads_ * hd});  // (B, T, C/tp)
  return o_proj_->forward(y);
}

at::Tensor LlamaBlock::forward(const at::Tensor& x, double loss_scale, LayerKv* cache) {
  at::Tensor h = x + attention(rms_norm(x, replicated(norm_1_weight_), o_.norm_eps), cache);
  at::Tensor m = rms_norm(h, replicated(norm_2_weight_), o_.norm_eps);
  if (moe_ && o_.sequence_parallel) {
    // The router and the experts see the whole sequence, as without sequence parallelism
    // (routing, capacity and the balancing loss are per sequence); the output goes back
    // to this rank's slice.
    const at::Tensor whole = gather_from_sequence_region_whole_grad(m, tp_);
    return h + split_to_sequence_region(moe_->forward(whole, loss_scale), tp_);
  }
  if (moe_) return h + moe_->forward(m, loss_scale);
  return h + down_->forward(at::silu(gate_->forward(m)) * up_->forward(m));  // (B, T, C)
}

namespace {

/// RoPE's tables for the tokens this rank holds, in its order: with context parallelism
/// the rows of their original positions.
RopeTables context_rope(const LlamaOptions& o) {
  RopeTables all = rope_tables(o.seq_len, o.head_dim(), o.rope_theta, o.dtype, o.device);
  if (context_size(o.cp) == 1) return all;
  const at::Tensor rows =
      context_positions(o.seq_len, context_rank(o.cp), context_size(o.cp), o.device);
  return {all.cos.index_select(0, rows), all.sin.index_select(0, rows)};
}

}  // namespace

LlamaStage::LlamaStage(const LlamaOptions& o, Communicator& tp, int stage, int stages,
                       Communicator* ep)
    : ModelStage(StageDims{o.hidden, o.vocab, o.seq_len, o.dtype,
                           o.sequence_parallel ? tp.size() : 1, context_size(o.cp), o.device},
                 o.seed, tp, stage, stages),
      o_(o),
      rope_(context_rope(o)) {
  TORCH_CHECK(o.layers % stages == 0, "model.layers = ", o.layers,
              " is not divisible by parallel.pp = ", stages);
  TORCH_CHECK(o.padded_vocab % tp.size() == 0, "padded vocabulary ", o.padded_vocab,
              " is not divisible by tp = ", tp.size());
  if (o.defer_init) params_.defer_init();
  // "wte" is the name ZeRO and checkpoints know as the embedding the head shares.
  const std::string embed_name = o.tie_embeddings ? "wte" : "embed";
  // Each layer's parameters are the registry entries its construction adds (add_unit).
  if (is_first()) {
    embed_ = register_module("embed", std::make_shared<VocabParallelEmbedding>(
                                          params_, tp, embed_name, o.vocab, o.padded_vocab,
                                          o.hidden, /*tied_copy=*/false, o.sequence_parallel));
    add_unit(0);
  }
  const int64_t per_stage = o.layers / stages;
  auto h = register_module("h", std::make_shared<torch::nn::Module>());
  for (int64_t i = stage * per_stage; i < (stage + 1) * per_stage; ++i) {
    const size_t first = params_.params().size();
    blocks_.push_back(std::make_shared<LlamaBlock>(params_, tp, ep, o, i, rope_));
    block_index_.push_back(i);
    h->register_module(std::to_string(i), blocks_.back());
    add_unit(first);
  }
  if (!is_last()) return;
  const size_t head_first = params_.params().size();
  norm_f_weight_ =
      register_parameter("norm_f_weight", norm_param(params_, "norm_f.weight", o.hidden));
  if (o.tie_embeddings) {
    if (!is_first())
      embed_ = register_module("embed", std::make_shared<VocabParallelEmbedding>(
                                            params_, tp, embed_name, o.vocab, o.padded_vocab,
                                            o.hidden, /*tied_copy=*/true));
  } else {
    lm_head_ = register_parameter("lm_head", params_.create({"lm_head.weight",
                                                             {o.padded_vocab, o.hidden},
                                                             ShardSpec{0, 1},
                                                             InitKind::kNormal,
                                                             kInitStd,
                                                             o.vocab,
                                                             /*weight_decay=*/true}));
    head_vocab_start_ = tp.rank() * (o.padded_vocab / tp.size());
  }
  add_unit(head_first);
  if (o.tie_embeddings && is_first()) units_.back().push_back(0);  // the head reads it too
}

void LlamaStage::take_moe_statistics(std::map<int64_t, MoeLayerStats>& into) {
  for (size_t b = 0; b < blocks_.size(); ++b)
    if (MoeMlp* moe = blocks_[b]->moe()) into[block_index_[b]] = moe->take_statistics();
}

void LlamaStage::set_router_bias(const std::map<int64_t, std::vector<double>>& bias) {
  for (size_t b = 0; b < blocks_.size(); ++b)
    if (MoeMlp* moe = blocks_[b]->moe())
      if (const auto it = bias.find(block_index_[b]); it != bias.end())
        moe->set_router_bias(it->second);
}

at::Tensor LlamaStage::forward(const at::Tensor& input, const at::Tensor& targets,
                               double loss_scale) {
  // Each layer runs inside the layer scope (ZeRO stage 3 gathers its parameters around it).
  int unit = 0;
  at::Tensor x = input;
  if (is_first())
    x = run_layer(scope_, unit++, input, [this](const at::Tensor& ids) {
      // A tied head on this stage too: the lookup's gradient may leave as rows.
      RowGradSink* sink = o_.tie_embeddings && is_last() ? row_sink_ : nullptr;
      return embed_->forward(ids, sink);  // (B, T, C); sequence parallel: (B, T/tp, C)
    });
  for (auto& block : blocks_)
    x = run_layer(
        scope_, unit++, x,
        [&block, loss_scale](const at::Tensor& h) { return block->forward(h, loss_scale); },
        layer_recompute_);
  if (!is_last()) return x;

  // The head is recomputed like a block unless it reads the embedding this stage's first
  // unit reads too: a separate backward would then hand the embedding its gradient in two
  // parts, and ZeRO reduces a gradient once it arrives.
  const bool recompute_head = layer_recompute_ && !(o_.tie_embeddings && is_first());
  // What the head uses is captured by value: a recomputation runs after this call returns.
  auto head = [this, targets, loss_scale](const at::Tensor& h) {
    const bool sp = o_.sequence_parallel;
    const at::Tensor norm_weight =
        sp ? sum_grad_over_sequence(norm_f_weight_, tp_) : norm_f_weight_;
    // The head reads the whole sequence: gathered from the slices under sequence parallelism.
    const at::Tensor normed =
        sp ? gather_from_sequence_region(rms_norm(h, norm_weight, o_.norm_eps), tp_)
           : copy_to_tp_region(rms_norm(h, norm_weight, o_.norm_eps), tp_);
    const int64_t B = normed.size(0), T = normed.size(1);
    const at::Tensor& head = o_.tie_embeddings ? embed_->weight() : lm_head_;  // (V/tp, C)
    const int64_t vocab_start = o_.tie_embeddings ? embed_->vocab_start() : head_vocab_start_;
    at::Tensor logits = at::matmul(normed.reshape({B * T, o_.hidden}), head.t());  // (B*T, V/tp)
    at::Tensor losses = vocab_parallel_cross_entropy(logits, targets.reshape({B * T}), tp_,
                                                     vocab_start, o_.vocab, reentrant_backward_);
    return losses.sum() * loss_scale;
  };
  return run_layer(scope_, unit, x, head, recompute_head);
}

at::Tensor LlamaStage::decode(const at::Tensor& ids, KvCache& cache) {
  check_decodable();
  at::NoGradGuard no_grad;
  const int64_t past = cache.length, n = ids.size(1);
  TORCH_CHECK(past + n <= o_.seq_len, "decode: positions up to ", past + n, " exceed the model's ",
              o_.seq_len, " (model.seq_len)");
  cache.layers.resize(blocks_.size());
  at::Tensor x = embed_->forward(ids);  // (B, n, C)
  for (size_t b = 0; b < blocks_.size(); ++b) x = blocks_[b]->forward(x, 0.0, &cache.layers[b]);
  cache.length = past + n;
  const at::Tensor normed = rms_norm(x, norm_f_weight_, o_.norm_eps);
  const at::Tensor& head = o_.tie_embeddings ? embed_->weight() : lm_head_;  // (V/tp, C)
  return at::matmul(normed, head.t());                                       // (B, n, V/tp)
}

}  // namespace trident
