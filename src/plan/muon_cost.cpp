// Muon's matrices, memory and work per pipeline stage.
#include "plan/muon_cost.h"

#include <algorithm>  // std::min, std::max

namespace trident::plan {

namespace {

double state_bytes(const PlanModel& m) { return m.precision == "fp64" ? 8.0 : 4.0; }

}  // namespace

MuonStage muon_stage(const PlanModel& m, int pp, int tp, int ep, int stage) {
  MuonStage out;
  const int64_t h = m.hidden, layers = m.layers / std::max(pp, 1), t = std::max(tp, 1);
  const int64_t first = static_cast<int64_t>(stage) * layers;
  auto add = [&](int64_t rows, int64_t cols, int64_t count) {
    for (int64_t k = 0; k < count; ++k) out.matrices.push_back({rows, cols});
    out.whole += static_cast<double>(rows * cols * count);
  };
  for (int64_t i = first; i < first + layers; ++i) {
    if (!m.llama) {  // q, k, v (one fused parameter), the output, fc, mlp.proj
      add(h, h, 4);
      add(4 * h, h, 1);
      add(h, 4 * h, 1);
      out.rank_dense += static_cast<double>(12 * h * h) / static_cast<double>(t);
      continue;
    }
    const int64_t kv = m.kv_heads > 0 ? m.kv_heads : m.heads, hd = h / m.heads;
    const int64_t ffn = m.ffn_hidden > 0 ? m.ffn_hidden : 4 * h, f = m.expert_ffn();
    // q and o split over tp; k and v over min(tp, kv) (copies beyond kv_heads).
    add(m.heads * hd, h, 1);
    add(h, m.heads * hd, 1);
    add(kv * hd, h, 2);
    out.rank_dense +=
        static_cast<double>(2 * m.heads * hd * h) / static_cast<double>(t) +
        static_cast<double>(2 * kv * hd * h) / static_cast<double>(std::min<int64_t>(t, kv));
    if (!m.moe_layer(i)) {
      add(ffn, h, 2);
      add(h, ffn, 1);
      out.rank_dense += static_cast<double>(3 * ffn * h) / static_cast<double>(t);
      continue;
    }
    if (m.moe_shared_expert) {
      add(f, h, 2);
      add(h, f, 1);
      out.rank_dense += static_cast<double>(3 * f * h) / static_cast<double>(t);
    }
    add(f, h, 2 * m.moe_experts);
    add(h, f, m.moe_experts);
    out.rank_experts +=
        static_cast<double>(m.moe_experts / std::max(ep, 1) * 3 * f * h) / static_cast<double>(t);
  }
  return out;
}

double newton_schulz_flops(const MuonMatrix& x, int64_t steps) {
  const double a = static_cast<double>(std::min(x.rows, x.cols));
  const double b = static_cast<double>(std::max(x.rows, x.cols));
  return static_cast<double>(steps) * (4.0 * a * a * b + 2.0 * a * a * a);
}

double muon_state_saving(const PlanModel& m, const Layout& l, int stage) {
  if (!m.muon) return 0;
  const MuonStage s = muon_stage(m, l.pp, l.tp, l.ep, stage);
  const double dp = l.zero == 0 ? 1.0 : static_cast<double>(std::max(l.replicas(), 1));
  const double edp = l.zero == 0 ? 1.0 : static_cast<double>(std::max(l.expert_dp(), 1));
  return state_bytes(m) * (s.rank_dense / dp + s.rank_experts / edp);
}

double muon_exchange_bytes(const PlanModel& m, const Layout& l, int stage) {
  if (!m.muon) return 0;
  const MuonStage s = muon_stage(m, l.pp, l.tp, l.ep, stage);
  const double ranks = static_cast<double>(l.replicas() * l.tp);
  double largest = 0;
  for (const MuonMatrix& x : s.matrices)
    largest = std::max(largest, static_cast<double>(x.rows * x.cols));
  const double all = state_bytes(m) * s.whole * (ranks + 1.0) / ranks;
  const double cap = std::max(static_cast<double>(m.muon_exchange_mib) * (1 << 20),
                              state_bytes(m) * largest * (ranks + 1.0));
  return std::min(all, cap);
}

}  // namespace trident::plan
