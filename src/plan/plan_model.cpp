// Arithmetic of the model and layout: names, bytes per element, parameter counts, FLOPs.
#include "plan/plan_model.h"

#include <algorithm>  // std::max
#include <numeric>    // std::lcm
#include <sstream>    // std::ostringstream
#include <stdexcept>  // std::invalid_argument

namespace trident::plan {

int64_t Layout::micro_batches(const PlanModel& m) const {
  const int64_t per_dp = micro_batch * dp;
  return per_dp > 0 ? m.global_batch / per_dp : 0;
}

std::string Layout::name() const {
  std::ostringstream out;
  out << "dp" << dp << (cp > 1 ? " cp" + std::to_string(cp) : "")
      << (ep > 1 ? " ep" + std::to_string(ep) : "") << " pp" << pp << " tp" << tp << " zero" << zero
      << " mb" << micro_batch << (checkpointing ? " ckpt" : "")
      << (selective && !checkpointing ? " selective" : "") << (sequence_parallel ? " sp" : "");
  return out.str();
}

PlanModel rank_tokens(const PlanModel& m, const Layout& layout) {
  PlanModel r = m;
  r.seq_len = m.seq_len / std::max(layout.cp, 1);
  return r;
}

StateBytes state_bytes_for(const std::string& precision, const std::string& grad_reduce_dtype) {
  StateBytes b;
  if (precision == "fp32") {
    b = {4, 4, 4, 8, 4, 4};
  } else if (precision == "fp64") {
    b = {8, 8, 8, 16, 8, 8};
  } else if (precision == "bf16") {
    // fp32 master + two fp32 moments; the ZeRO-2 shard accumulates in fp32.
    b = {2, 2, 4, 12, 2, grad_reduce_dtype == "bf16" ? 2.0 : 4.0};
  } else {
    throw std::invalid_argument("plan: unknown precision '" + precision +
                                "'; use fp32, fp64 or bf16");
  }
  return b;
}

StateBytes zero_paper_mixed_precision() { return {2, 2, 2, 12, 2, 2}; }

int64_t padded_vocab(const PlanModel& m, int tp) {
  const int64_t multiple =
      std::lcm(std::max<int64_t>(m.vocab_multiple, 1), static_cast<int64_t>(std::max(tp, 1)));
  return (m.vocab + multiple - 1) / multiple * multiple;
}

int64_t PlanModel::layer_matrix_params() const {
  if (!llama) return 12 * hidden * hidden;
  const int64_t kv = kv_heads > 0 ? kv_heads : heads;
  const int64_t ffn = ffn_hidden > 0 ? ffn_hidden : 4 * hidden;
  return 2 * hidden * hidden + 2 * hidden * kv * (hidden / heads) + 3 * hidden * ffn;
}

bool PlanModel::moe_layer(int64_t index) const {
  return moe_experts > 0 && (index + 1) % std::max<int64_t>(moe_layer_every, 1) == 0;
}

int64_t PlanModel::moe_layers_in(int64_t first, int64_t count) const {
  int64_t n = 0;
  for (int64_t i = first; i < first + count; ++i) n += moe_layer(i) ? 1 : 0;
  return n;
}

int64_t PlanModel::moe_layer_active_params() const {
  const int64_t ffn = ffn_hidden > 0 ? ffn_hidden : 4 * hidden;
  const int64_t attention = layer_matrix_params() - 3 * hidden * ffn;
  return attention + moe_experts * hidden +
         (moe_top_k + (moe_shared_expert ? 1 : 0)) * expert_params();
}

namespace {

/// A Llama stage: k and v are split over min(tp, kv_heads) (replicated beyond), the
/// other matrices over tp; the two RMSNorm weights are whole; no biases, no positions.
/// An MoE layer's router is whole on every tp rank, its experts' matrices split over tp.
int64_t llama_stage_parameters(const PlanModel& m, int pp, int tp, int stage, int ep) {
  const int64_t h = m.hidden, kv = m.kv_heads > 0 ? m.kv_heads : m.heads;
  const int64_t kv_params = 2 * h * kv * (h / m.heads);
  const int64_t ffn = m.ffn_hidden > 0 ? m.ffn_hidden : 4 * h;
  const int64_t attention = (m.layer_matrix_params() - 3 * h * ffn - kv_params) / tp +
                            kv_params / std::min<int64_t>(tp, kv) + 2 * h;
  const int64_t layers = m.layers / pp;
  const int64_t moe = m.moe_layers_in(stage * layers, layers);
  const int64_t moe_layer = m.moe_experts * h + (m.moe_shared_expert ? m.expert_params() / tp : 0) +
                            m.moe_experts / std::max(ep, 1) * m.expert_params() / tp;
  int64_t n = layers * attention + (layers - moe) * 3 * h * ffn / tp + moe * moe_layer;
  const int64_t embedding = padded_vocab(m, tp) / tp * h;
  if (stage == 0) n += embedding;
  if (stage == pp - 1) {
    n += h;                                 // final norm
    if (!m.tied || pp > 1) n += embedding;  // the head, or the tied head's copy
  }
  return n;
}

}  // namespace

int64_t stage_parameters(const PlanModel& m, int pp, int tp, int stage, int ep) {
  if (m.llama) return llama_stage_parameters(m, pp, tp, stage, ep);
  const int64_t h = m.hidden;
  // Sharded over tp: qkv (3h^2 + 3h), attn.proj weight h^2, fc (4h^2 + 4h), mlp.proj
  // weight 4h^2. Whole on every tp rank: two norms (4h) and the row-parallel biases (2h).
  const int64_t per_layer = (12 * h * h + 7 * h) / tp + 6 * h;
  int64_t n = m.layers / pp * per_layer;
  const int64_t embedding = padded_vocab(m, tp) / tp * h;
  if (stage == 0) n += embedding + m.seq_len * h;  // token rows of this tp rank, positions
  if (stage == pp - 1) {
    n += 2 * h;                  // final norm
    if (pp > 1) n += embedding;  // the tied head's copy of the token embedding
  }
  return n;
}

LayerNumels layer_numels(const PlanModel& m, int tp, int ep, int64_t index) {
  const int64_t h = m.hidden, t = tp;
  LayerNumels n;
  if (!m.llama) {
    // ln_1, qkv (column), attn.proj (row, whole bias), ln_2, fc (column), mlp.proj (row).
    n.dense = {h, h, 3 * h / t * h, 3 * h / t, h * h / t,     h,
               h, h, 4 * h / t * h, 4 * h / t, 4 * h / t * h, h};
    return n;
  }
  const int64_t kv = m.kv_heads > 0 ? m.kv_heads : m.heads, hd = h / m.heads;
  const int64_t ffn = m.ffn_hidden > 0 ? m.ffn_hidden : 4 * h, f = m.expert_ffn();
  const int64_t replicas = t > kv ? t / kv : 1;
  // norm_1, q, k, v (column, k and v replicated beyond kv_heads), o (row), norm_2; no biases.
  n.dense = {h,
             m.heads * hd / t * h,
             kv * hd * replicas / t * h,
             kv * hd * replicas / t * h,
             h * m.heads * hd / t,
             h};
  if (!m.moe_layer(index)) {
    n.dense.insert(n.dense.end(), {ffn / t * h, ffn / t * h, h * ffn / t});  // gate, up, down
    return n;
  }
  n.dense.push_back(m.moe_experts * h);  // the router, whole on every tp rank
  if (m.moe_shared_expert) n.dense.insert(n.dense.end(), {f / t * h, f / t * h, h * f / t});
  for (int64_t j = 0; j < m.moe_experts / std::max(ep, 1); ++j)
    n.experts.insert(n.experts.end(), {f / t * h, f / t * h, h * f / t});  // gate, up, down
  return n;
}

std::vector<int64_t> stage_bucketed_numels(const PlanModel& m, int pp, int tp, int stage) {
  const int64_t h = m.hidden;
  const int64_t embedding = padded_vocab(m, tp) / tp * h;
  const bool first = stage == 0, last = stage == pp - 1;
  const int64_t layers = m.layers / pp;
  std::vector<int64_t> n;
  if (first && !m.llama) n.push_back(m.seq_len * h);  // positions; the token embedding is apart
  if (first && m.llama && !m.tied) n.push_back(embedding);  // an untied embedding is bucketed
  for (int64_t i = stage * layers; i < (stage + 1) * layers; ++i) {
    const LayerNumels layer = layer_numels(m, tp, 1, i);
    n.insert(n.end(), layer.dense.begin(), layer.dense.end());
  }
  if (last && !m.llama) n.insert(n.end(), {h, h});  // ln_f
  if (last && m.llama) {
    n.push_back(h);                       // norm_f
    if (!m.tied) n.push_back(embedding);  // lm_head
  }
  return n;
}

std::vector<int64_t> stage_expert_numels(const PlanModel& m, int pp, int tp, int ep, int stage) {
  std::vector<int64_t> n;
  const int64_t layers = m.layers / pp;
  for (int64_t i = stage * layers; i < (stage + 1) * layers; ++i) {
    const LayerNumels layer = layer_numels(m, tp, ep, i);
    n.insert(n.end(), layer.experts.begin(), layer.experts.end());
  }
  return n;
}

int64_t stage_expert_parameters(const PlanModel& m, int pp, int tp, int ep, int stage) {
  int64_t n = 0;
  for (int64_t x : stage_expert_numels(m, pp, tp, ep, stage)) n += x;
  return n;
}

int64_t total_parameters(const PlanModel& m) {
  // One stage holds everything; a Llama's untied head is then counted beside the embedding.
  return stage_parameters(m, 1, 1, 0);
}

double layer_forward_flops_per_token(const PlanModel& m) {
  const double h = static_cast<double>(m.hidden), s = static_cast<double>(m.seq_len);
  return 2.0 * static_cast<double>(m.layer_matrix_params()) + 2.0 * 2.0 * s * h;
}

int64_t active_parameters(const PlanModel& m) {
  return total_parameters(m) -
         m.moe_layers_in(0, m.layers) * (m.moe_experts - m.moe_top_k) * m.expert_params();
}

double moe_layer_forward_flops_per_token(const PlanModel& m) {
  const double h = static_cast<double>(m.hidden), s = static_cast<double>(m.seq_len);
  return 2.0 * static_cast<double>(m.moe_layer_active_params()) + 2.0 * 2.0 * s * h;
}

double layers_forward_flops_per_token(const PlanModel& m, int64_t first, int64_t count) {
  const double moe = static_cast<double>(m.moe_layers_in(first, count));
  return (static_cast<double>(count) - moe) * layer_forward_flops_per_token(m) +
         moe * moe_layer_forward_flops_per_token(m);
}

double head_forward_flops_per_token(const PlanModel& m, int tp) {
  return 2.0 * static_cast<double>(padded_vocab(m, tp)) * static_cast<double>(m.hidden);
}

double model_flops_per_step(const PlanModel& m, int tp) {
  const double per_token =
      3.0 * (layers_forward_flops_per_token(m, 0, m.layers) + head_forward_flops_per_token(m, tp));
  return per_token * static_cast<double>(m.global_batch * m.seq_len);
}

}  // namespace trident::plan
