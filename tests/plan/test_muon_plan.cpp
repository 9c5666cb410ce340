// Muon in the planner: the stage's matrices, Newton-Schulz's FLOPs, the state it saves and
// the time its step adds, worked by hand on small models.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include "hand_worked.h"        // hand_gpt, flat
#include "plan/memory_model.h"  // stage_memory
#include "plan/muon_cost.h"     // muon_stage, newton_schulz_flops, muon_state_saving
#include "plan/step_parts.h"    // muon_s
#include "plan/time_model.h"    // step_time, reduce_scatter_s

namespace trident::plan {
namespace {

using testing::flat;
using testing::hand_gpt;

TEST(MuonPlan, gpt_stage_matrices_whole_and_per_rank) {
  // h = 64, 2 layers on one stage, tp 2: per layer q, k, v, o (64 x 64), fc (256 x 64) and
  // mlp.proj (64 x 256); 12 h^2 a layer, half of it on each tp rank.
  const MuonStage s = muon_stage(hand_gpt(), 1, 2, 1, 0);
  EXPECT_EQ(s.matrices.size(), 12u);
  EXPECT_DOUBLE_EQ(s.whole, 2 * 12 * 64 * 64);
  EXPECT_DOUBLE_EQ(s.rank_dense, 2 * 12 * 64 * 64 / 2);
  EXPECT_DOUBLE_EQ(s.rank_experts, 0);
  // pp 2: one layer a stage.
  EXPECT_DOUBLE_EQ(muon_stage(hand_gpt(), 2, 1, 1, 1).whole, 12 * 64 * 64);
}

TEST(MuonPlan, llama_kv_heads_and_experts) {
  PlanModel m = hand_gpt();
  m.llama = true;
  m.heads = 4, m.kv_heads = 2, m.ffn_hidden = 96;
  m.moe_experts = 4, m.moe_ffn_hidden = 32, m.moe_layer_every = 2;  // layer 1 is MoE
  // tp 4 over 2 kv heads: k and v are split in two, each half on two ranks.
  const MuonStage s = muon_stage(m, 1, 4, 2, 0);
  const double hd = 16, attention_rank = 2 * 64 * 64 / 4.0 + 2 * (2 * hd) * 64 / 2.0;
  EXPECT_DOUBLE_EQ(s.rank_dense, 2 * attention_rank + 3 * 96 * 64 / 4.0);
  // ep 2: two of the four experts on each rank, each split over tp 4.
  EXPECT_DOUBLE_EQ(s.rank_experts, 2 * 3 * 32 * 64 / 4.0);
  // Layer 0: q, o, k, v, gate, up, down; layer 1: q, o, k, v and 4 experts x 3.
  EXPECT_EQ(s.matrices.size(), 7u + 4u + 12u);
}

TEST(MuonPlan, newton_schulz_flops_by_hand) {
  // 768 x 3072, five iterations: A = 768, B = 3072; 4 A^2 B + 2 A^3 each.
  const double a = 768, b = 3072;
  EXPECT_DOUBLE_EQ(newton_schulz_flops({768, 3072}, 5), 5 * (4 * a * a * b + 2 * a * a * a));
  EXPECT_DOUBLE_EQ(newton_schulz_flops({3072, 768}, 5), newton_schulz_flops({768, 3072}, 5));
}

TEST(MuonPlan, one_moment_less_of_each_matrix_element) {
  PlanModel adamw = hand_gpt(), muon = hand_gpt();
  muon.muon = true;
  Layout l;
  l.dp = 4, l.zero = 1;
  const MemoryBreakdown a = stage_memory(adamw, l, 0), m = stage_memory(muon, l, 0);
  // fp32: 4 bytes of each of the 2 x 12 h^2 matrix elements, sharded over dp 4.
  EXPECT_DOUBLE_EQ(a.optimizer_states - m.optimizer_states, 4.0 * 2 * 12 * 64 * 64 / 4);
  // The exchange buffer: the stage's matrices over its 4 ranks, and this rank's block.
  EXPECT_DOUBLE_EQ(m.communication - a.communication, 4.0 * 2 * 12 * 64 * 64 * 5 / 4);
  l.zero = 0;  // unsharded, every rank saves all of it
  EXPECT_DOUBLE_EQ(muon_state_saving(muon, l, 0), 4.0 * 2 * 12 * 64 * 64);
}

TEST(MuonPlan, the_step_adds_newton_schulz_over_the_owners_and_the_exchange) {
  PlanModel m = hand_gpt();
  m.muon = true;
  const Cluster c = flat();  // 1 TFLOP/s, 1 GB/s links
  Layout one;
  double flops = 0;
  for (const MuonMatrix& x : muon_stage(m, 1, 1, 1, 0).matrices) flops += newton_schulz_flops(x, 5);
  EXPECT_DOUBLE_EQ(muon_s(m, one, c), flops / 1e12);  // one rank does all, no exchange
  Layout dp4;
  dp4.dp = 4, dp4.zero = 1;
  const Link link = link_for(c, dp4, Dim::kDp);
  const double bytes = 4.0 * 2 * 12 * 64 * 64;
  EXPECT_DOUBLE_EQ(muon_s(m, dp4, c), flops / 4 / 1e12 + reduce_scatter_s(bytes, 4, link) +
                                          all_gather_s(bytes, 4, link));
  // And the step time carries it in its optimizer part.
  PlanModel adamw = hand_gpt();
  EXPECT_NEAR(step_time(m, dp4, c).optimizer - step_time(adamw, dp4, c).optimizer,
              muon_s(m, dp4, c), 1e-15);
}

}  // namespace
}  // namespace trident::plan
