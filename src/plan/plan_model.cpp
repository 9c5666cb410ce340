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
  out << "dp" << dp << " pp" << pp << " tp" << tp << " zero" << zero << " mb" << micro_batch
      << (checkpointing ? " ckpt" : "") << (selective && !checkpointing ? " selective" : "")
      << (sequence_parallel ? " sp" : "");
  return out.str();
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

namespace {

/// A Llama stage: k and v are split over min(tp, kv_heads) (replicated beyond), the
/// other matrices over tp; the two RMSNorm weights are whole; no biases, no positions.
int64_t llama_stage_parameters(const PlanModel& m, int pp, int tp, int stage) {
  const int64_t h = m.hidden, kv = m.kv_heads > 0 ? m.kv_heads : m.heads;
  const int64_t kv_params = 2 * h * kv * (h / m.heads);
  const int64_t per_layer =
      (m.layer_matrix_params() - kv_params) / tp + kv_params / std::min<int64_t>(tp, kv) + 2 * h;
  int64_t n = m.layers / pp * per_layer;
  const int64_t embedding = padded_vocab(m, tp) / tp * h;
  if (stage == 0) n += embedding;
  if (stage == pp - 1) {
    n += h;                                 // final norm
    if (!m.tied || pp > 1) n += embedding;  // the head, or the tied head's copy
  }
  return n;
}

}  // namespace

int64_t stage_parameters(const PlanModel& m, int pp, int tp, int stage) {
  if (m.llama) return llama_stage_parameters(m, pp, tp, stage);
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

std::vector<int64_t> stage_bucketed_numels(const PlanModel& m, int pp, int tp, int stage) {
  const int64_t h = m.hidden, t = tp;
  const int64_t embedding = padded_vocab(m, tp) / t * h;
  const bool first = stage == 0, last = stage == pp - 1;
  std::vector<int64_t> n;
  const int64_t layers = m.layers / pp;
  if (!m.llama) {
    if (first) n.push_back(m.seq_len * h);  // positions; the token embedding is apart
    for (int64_t i = 0; i < layers; ++i) {
      // ln_1, qkv (column), attn.proj (row, whole bias), ln_2, fc (column), mlp.proj (row).
      for (int64_t x : {h, h, 3 * h / t * h, 3 * h / t, h * h / t, h, h, h, 4 * h / t * h,
                        4 * h / t, 4 * h / t * h, h})
        n.push_back(x);
    }
    if (last) n.insert(n.end(), {h, h});  // ln_f
    return n;
  }
  const int64_t kv = m.kv_heads > 0 ? m.kv_heads : m.heads, hd = h / m.heads;
  const int64_t ffn = m.ffn_hidden > 0 ? m.ffn_hidden : 4 * h;
  const int64_t replicas = t > kv ? t / kv : 1;
  if (first && !m.tied) n.push_back(embedding);  // an untied embedding is bucketed
  for (int64_t i = 0; i < layers; ++i) {
    // norm_1, q, k, v (column, k and v replicated beyond kv_heads), o (row), norm_2, gate,
    // up (column), down (row); no biases.
    for (int64_t x :
         {h, m.heads * hd / t * h, kv * hd * replicas / t * h, kv * hd * replicas / t * h,
          h * m.heads * hd / t, h, ffn / t * h, ffn / t * h, h * ffn / t})
      n.push_back(x);
  }
  if (last) {
    n.push_back(h);                       // norm_f
    if (!m.tied) n.push_back(embedding);  // lm_head
  }
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

double head_forward_flops_per_token(const PlanModel& m, int tp) {
  return 2.0 * static_cast<double>(padded_vocab(m, tp)) * static_cast<double>(m.hidden);
}

double model_flops_per_step(const PlanModel& m, int tp) {
  const double per_token = 3.0 * (static_cast<double>(m.layers) * layer_forward_flops_per_token(m) +
                                  head_forward_flops_per_token(m, tp));
  return per_token * static_cast<double>(m.global_batch * m.seq_len);
}

}  // namespace trident::plan
