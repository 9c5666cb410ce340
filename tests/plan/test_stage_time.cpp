// The parts of one micro-batch on one stage, each against its formula worked by hand: a
// GPT-2 of 2 layers, h 64, 4 heads, vocabulary 256, 32 tokens, fp32, at 1 TFLOP/s.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <cmath>  // std::sqrt

#include "hand_worked.h"      // hand_gpt, flat
#include "plan/stage_time.h"  // stage_shape and the parts

namespace trident::plan {
namespace {

/// Per token, a GPT-2 layer of h 64 at s 32: 2 x 12 h^2 matmul weights + attention's
/// 2 x 2 s h, and the head's 2 V h.
constexpr double kLayerFlops = 2.0 * 12 * 64 * 64 + 4.0 * 32 * 64;  // 106496
constexpr double kHeadFlops = 2.0 * 256 * 64;                       // 32768

PlanModel gpt() { return testing::hand_gpt(); }

/// An MoE Llama: every layer's MLP is 4 experts of width 128, 2 chosen a token.
PlanModel moe() {
  PlanModel m = gpt();
  m.llama = true;
  m.moe_experts = 4, m.moe_top_k = 2, m.moe_ffn_hidden = 128;
  return m;
}

using testing::flat;

TEST(StageShape, counts_the_ranks_tokens_and_the_stages_layers) {
  PlanModel m = gpt();
  m.layers = 4;
  Layout l;
  l.pp = 2, l.cp = 2, l.tp = 2, l.micro_batch = 2, l.checkpointing = true;
  StageShape s = stage_shape(m, l, flat(), 1);
  EXPECT_EQ(s.m.seq_len, 16);        // 32 / cp
  EXPECT_DOUBLE_EQ(s.tokens, 32.0);  // 16 x micro-batch 2
  EXPECT_DOUBLE_EQ(s.layers, 2.0);   // 4 / pp
  EXPECT_EQ(s.first_layer, 2);
  EXPECT_FALSE(s.first);
  EXPECT_TRUE(s.last);
  EXPECT_DOUBLE_EQ(s.sl, 16.0);
  EXPECT_DOUBLE_EQ(s.ring_blocks, 1.5);  // (cp + 1) / 2
  EXPECT_DOUBLE_EQ(s.kv_heads, 4.0);     // GPT-2: every head
  EXPECT_DOUBLE_EQ(s.rate, 1e12);
  EXPECT_DOUBLE_EQ(s.passes, 2.0);
  EXPECT_DOUBLE_EQ(s.expert_flops, 0.0);
  // Interleaved, two chunks a rank: virtual stage 1 of 4 holds layer 1 alone.
  s = stage_shape(m, l, flat(), 1, 2);
  EXPECT_EQ(s.stages, 4);
  EXPECT_DOUBLE_EQ(s.layers, 1.0);
  EXPECT_EQ(s.first_layer, 1);
  EXPECT_FALSE(s.last);
}

TEST(StageShape, routed_experts_multiply_their_own_rows) {
  Layout l;
  l.dp = 2, l.ep = 2;
  const StageShape s = stage_shape(moe(), l, flat(), 0);
  EXPECT_DOUBLE_EQ(s.moe, 2.0);
  // tokens k ep / E = 32 x 2 x 2 / 4.
  EXPECT_DOUBLE_EQ(s.expert_rows, 32.0);
  // 2 layers x 32 tokens x k 2 x 2 FLOPs x an expert's 3 h f = 3 x 64 x 128 weights.
  EXPECT_DOUBLE_EQ(s.expert_flops, 2.0 * 32 * 2 * 2 * (3 * 64 * 128));
}

TEST(Compute, forward_matmuls_of_layers_head_and_ring_blocks) {
  Layout l;
  MatmulTime t = forward_matmuls(stage_shape(gpt(), l, flat(), 0), l);
  EXPECT_DOUBLE_EQ(t.flops, 32 * (2 * kLayerFlops + kHeadFlops));  // 7864320
  EXPECT_DOUBLE_EQ(t.seconds, 7864320e-12);
  // tp 2 halves every matmul.
  l.tp = 2;
  t = forward_matmuls(stage_shape(gpt(), l, flat(), 0), l);
  EXPECT_DOUBLE_EQ(t.flops, 3932160.0);
  // cp 2: 16 tokens whose attention spans 16 (the diagonal block), and half a block more:
  // 16 tokens x 2 layers x 4 s' h x ((cp + 1) / 2 - 1).
  l.tp = 1, l.cp = 2;
  t = forward_matmuls(stage_shape(gpt(), l, flat(), 0), l);
  const double per_token = 2 * (2.0 * 12 * 64 * 64 + 4.0 * 16 * 64) + kHeadFlops;
  EXPECT_DOUBLE_EQ(t.flops, 16 * per_token + 16.0 * 2 * 4 * 16 * 64 * 0.5);  // 3866624
}

TEST(Compute, experts_matmuls_at_their_own_rate) {
  Cluster c = flat();
  // 1 TFLOP/s at the layers' size (cube root of 32 x 64 x 256), 0.5 at the experts'
  // (of 32 x 64 x 128).
  c.matmul_tflops["fp32"] = {{64, 0.5}, {80, 1.0}};
  Layout l;
  l.dp = 2, l.ep = 2;
  const StageShape s = stage_shape(moe(), l, c, 0);
  EXPECT_DOUBLE_EQ(s.rate, 1e12);
  EXPECT_DOUBLE_EQ(s.expert_rate, 0.5e12);
  const MatmulTime t = forward_matmuls(s, l);
  // A Llama MoE layer's dense weights: q, o (2 h^2), k, v (2 h^2 at 4 kv heads), the router
  // (E h): 2 x (4 h^2 + 4 h) FLOPs a token, with attention's 4 s h; the head 2 V h.
  const double dense = 32 * (2 * (2.0 * (4 * 64 * 64 + 4 * 64) + 4.0 * 32 * 64) + kHeadFlops);
  const double experts = 2.0 * 32 * 2 * 2 * (3 * 64 * 128);
  EXPECT_DOUBLE_EQ(t.flops, dense + experts);
  EXPECT_NEAR(t.seconds, dense / 1e12 + experts / 0.5e12, 1e-18);
}

TEST(Compute, attention_core_rerun_without_full_recomputation) {
  Layout l;
  l.selective = true;
  const StageShape s = stage_shape(gpt(), l, flat(), 0);
  // Korthikanti's s b h (34 + 5 a s / h) with 4-byte elements, less the selective 34.
  const double layer_act = 32 * 64 * (34 + 5 * 4 * 32 / 64.0) * 2;  // 180224
  EXPECT_DOUBLE_EQ(mean_layer_activation_bytes(s, l), layer_act);
  CoreRerun r = attention_core_rerun(s, l, layer_act, 1e9);
  EXPECT_DOUBLE_EQ(r.flops, 32.0 * 2 * 4 * 32 * 64);  // tokens x layers x 4 s h
  EXPECT_DOUBLE_EQ(r.matmul_s, 524288e-12);
  // The core's 5 a s^2 b elements of 2 bytes' units, twice a layer, at 1 GB/s.
  EXPECT_DOUBLE_EQ(r.elementwise_s, 2.0 * 2 * (5 * 4 * 32 * 32 * 2) / 1e9);
  // Full recomputation reruns everything instead: nothing here.
  l.checkpointing = true;
  r = attention_core_rerun(s, l, layer_act, 1e9);
  EXPECT_EQ(r.flops + r.matmul_s + r.elementwise_s, 0.0);
  // Ring attention reruns its (cp + 1) / 2 blocks' products; its softmax is its own part.
  l.checkpointing = l.selective = false;
  l.cp = 2;
  r = attention_core_rerun(stage_shape(gpt(), l, flat(), 0), l, layer_act, 1e9);
  EXPECT_DOUBLE_EQ(r.flops, 16.0 * 2 * 4 * 16 * 64 * 1.5);
  EXPECT_EQ(r.elementwise_s, 0.0);
}

TEST(Compute, ring_elementwise_over_scores_and_steps) {
  Layout l;
  l.cp = 2;
  const StageShape s = stage_shape(gpt(), l, flat(), 0);
  const RingElementwise r = ring_elementwise(s, l, 1e9);
  // Scores: b a s'^2 (cp + 1) / 2 of 4 bytes = 1 x 4 x 16^2 x 1.5 x 4 = 6144, six passes a
  // layer.
  EXPECT_DOUBLE_EQ(r.scores_s, 2 * 6 * 6144e-9);
  // E = K = 16 tokens x 64 x 4 bytes = 4096: forward (cp - 1) 7 E, backward cp (10 K + 3 E).
  EXPECT_DOUBLE_EQ(r.steps_s, 2 * (7 * 4096 + 2 * 13 * 4096) * 1e-9);
  EXPECT_DOUBLE_EQ(r.forward_s, 2 * 7 * 4096e-9);
  // Grouped kv heads (a Llama's 1 of 4): K = E / 4, and the repeats, 3 E forward and 5 E
  // backward a block.
  PlanModel llama = gpt();
  llama.llama = true, llama.kv_heads = 1;
  const RingElementwise g = ring_elementwise(stage_shape(llama, l, flat(), 0), l, 1e9);
  EXPECT_DOUBLE_EQ(g.forward_s, 2 * (7 * 4096 + 2 * 3 * 4096) * 1e-9);
  EXPECT_DOUBLE_EQ(g.steps_s, 2 * (13 * 4096 + 2 * (10 * 1024 + 8 * 4096)) * 1e-9);
  // Without cp, or without a rate, nothing.
  EXPECT_EQ(ring_elementwise(s, Layout{}, 1e9).steps_s, 0.0);
  EXPECT_EQ(ring_elementwise(s, l, 0).steps_s, 0.0);
}

TEST(Compute, elementwise_streams_six_times_the_activations) {
  Layout l;
  const StageShape s = stage_shape(gpt(), l, flat(), 0);
  // Two layers of 1000 bytes, and the last stage's head: 2 s b h + 2 s b V elements.
  const double act = 2 * 1000.0 + (2 * 32 * 64 + 2 * 32 * 256) * 4;  // 83920
  Elementwise e = elementwise(s, l, 1000, 1e9);
  EXPECT_DOUBLE_EQ(e.activations_s, 6 * act / 1e9);
  EXPECT_DOUBLE_EQ(e.recompute_s, 2 * act / 1e9);
  EXPECT_EQ(e.expert_copies_s, 0.0);
  // Stage 0 of 2 has no head.
  l.pp = 2;
  PlanModel m = gpt();
  m.layers = 4;
  e = elementwise(stage_shape(m, l, flat(), 0), l, 1000, 1e9);
  EXPECT_DOUBLE_EQ(e.activations_s, 6 * 2000e-9);
  // ep 2: each MoE layer copies each choice's row (k h 4 bytes a token) 3 x 6 x 2 times.
  Layout ep;
  ep.dp = 2, ep.ep = 2;
  e = elementwise(stage_shape(moe(), ep, flat(), 0), ep, 1000, 1e9);
  EXPECT_DOUBLE_EQ(e.expert_copies_s, 2 * 36.0 * (32 * 2 * 64 * 4) / 1e9);
  EXPECT_EQ(elementwise(s, Layout{}, 1000, 0).activations_s, 0.0);
}

TEST(Compute, operator_calls_per_layer_and_at_the_ends) {
  Cluster c = flat();
  c.layer_overhead_us = 100;
  Layout l;
  // Two layers, and the ends (default two layers' worth) half each on the only stage.
  EXPECT_DOUBLE_EQ(operator_calls_s(stage_shape(gpt(), l, c, 0), l, c), 400e-6);
  c.layer_overhead_tp_us = 150;
  l.tp = 2;
  EXPECT_DOUBLE_EQ(operator_calls_s(stage_shape(gpt(), l, c, 0), l, c), (2 * 150 + 300) * 1e-6);
  // Ring attention: 20 calls a block of cp 2, half a layer's 40 each.
  l.tp = 1, l.cp = 2;
  EXPECT_DOUBLE_EQ(operator_calls_s(stage_shape(gpt(), l, c, 0), l, c), (2 * 2 * 100 + 200) * 1e-6);
  // MoE, E 4 at ep 2: (10 + 12 E + 5 E / ep - 5) / 40 layers more each.
  Layout ep;
  ep.dp = 2, ep.ep = 2;
  c.ends_overhead_us = 50;
  EXPECT_NEAR(operator_calls_s(stage_shape(moe(), ep, c, 0), ep, c),
              (2 * (1 + 63.0 / 40) * 100 + 50) * 1e-6, 1e-18);
}

TEST(Compute, weights_cost_their_bytes) {
  Cluster c = flat();
  Layout l;
  EXPECT_EQ(weights_s(gpt(), stage_shape(gpt(), l, c, 0), l, c), 0.0);  // not calibrated
  c.weight_gbps = 1;
  // 2 layers of 12 h^2 + 13 h, the token and position embeddings, the final norm: 118528
  // fp32 weights.
  const double weights = 2 * (12 * 64 * 64 + 13 * 64) + 256 * 64 + 32 * 64 + 2 * 64;
  EXPECT_DOUBLE_EQ(weights_s(gpt(), stage_shape(gpt(), l, c, 0), l, c), weights * 4 / 1e9);
}

TEST(Compute, zb_h1_input_half_is_a_forward_and_two_thirds_of_the_rest) {
  EXPECT_DOUBLE_EQ(zb_h1_input_half_s(1.0, 3.0), 1.0);
  EXPECT_DOUBLE_EQ(zb_h1_input_half_s(1.0, 6.0), 3.0);
}

TEST(Compute, a_micro_batch_adds_its_parts_and_the_recomputation) {
  Cluster c = flat();
  c.memory_gbps = 1;
  c.layer_overhead_us = 100;
  c.weight_gbps = 1;
  c.contention = {{1.0, 1.25}};
  Layout l;
  l.checkpointing = true;
  const ComputeTime t = micro_batch_compute(gpt(), stage_shape(gpt(), l, c, 0), l, c);
  const double matmul_s = 7864320e-12;
  const double act = 2 * 180224.0 + 81920;  // the layers' and the head's activations
  const double calls = 400e-6, weights = 118528 * 4e-9;
  const double base = 3 * matmul_s + 6 * act / 1e9 + calls + weights;
  const double recompute = matmul_s + 2 * act / 1e9 + calls / 3 + weights / 6;
  EXPECT_NEAR(t.forward, 1.25 * base / 3, 1e-15);
  EXPECT_NEAR(t.backward, 1.25 * base * 2 / 3, 1e-15);
  EXPECT_NEAR(t.compute, 1.25 * (base + recompute), 1e-15);
  EXPECT_DOUBLE_EQ(t.flops, 4 * 7864320.0);
}

TEST(Tp, counts_of_a_stages_collectives) {
  TpCounts fwd, bwd;
  Layout l;
  l.tp = 2;
  // GPT-2, 3 layers, embedding and head on the stage: 2 row-parallel layers a layer reduce
  // forward, 2 column-parallel ones backward.
  tp_counts(gpt(), l, true, true, 3, fwd, bwd);
  EXPECT_EQ(fwd.all_reduce, 7);
  EXPECT_EQ(bwd.all_reduce, 7);
  // Sequence parallel, recomputed: backward gathers again what forward gathered (not the
  // head's input) and reduce-scatters again what it reduce-scattered.
  PlanModel llama = gpt();
  llama.llama = true;
  l.sequence_parallel = l.checkpointing = true;
  fwd = bwd = TpCounts{};
  tp_counts(llama, l, true, true, 3, fwd, bwd);
  EXPECT_EQ(fwd.all_gather, 3 * 5 + 1);
  EXPECT_EQ(fwd.reduce_scatter, 3 * 2 + 1);
  EXPECT_EQ(bwd.all_gather, 3 * 7 + 1 + 15);
  EXPECT_EQ(bwd.reduce_scatter, 3 * 5 + 1 + 7);
  EXPECT_EQ(bwd.all_reduce, 0);
}

TEST(Tp, moe_layers_reduce_the_experts_rows) {
  // Over 2 ranks at 1 GB/s an all-reduce of X bytes takes X ns, a gather or scatter X / 2.
  const Link link{1e9, 0, false};
  Layout l;
  l.tp = 2;
  PlanModel m = moe();
  m.moe_shared_expert = true;
  const StageShape s = stage_shape(m, l, flat(), 0);
  // Activations 32 x 64 x 4 = 8192 bytes; each expert's rows 32 x 2 / 4 = 16: 4096 bytes.
  PassSeconds t = moe_layer_tp(s, l, link);
  EXPECT_DOUBLE_EQ(t.forward, (8192 + 4 * 4096 + 8192) * 1e-9);
  EXPECT_DOUBLE_EQ(t.backward, (2 * 8192 + 2 * 4 * 4096 + 3 * 8192) * 1e-9);
  l.sequence_parallel = true;
  t = moe_layer_tp(s, l, link);
  EXPECT_DOUBLE_EQ(t.forward, (8192 + 4 * 4096 + 4 * 4096 + 4096) * 1e-9);
  EXPECT_DOUBLE_EQ(t.backward, (2 * 8192 + 2 * 4 * 4096 + 5 * 4096 + 3 * 4096) * 1e-9);
}

TEST(Tp, loss_and_drift) {
  const Link link{1e9, 0, false};
  Layout l;
  l.tp = 2;
  // Three all-reduces of a value (4 bytes) a token.
  EXPECT_DOUBLE_EQ(loss_tp_s(stage_shape(gpt(), l, flat(), 0), l, link), 3 * 128e-9);
  Cluster c = flat();
  EXPECT_EQ(tp_drift_s(c, 2, 1.0), 0.0);
  c.sync_fraction = 0.1;
  EXPECT_DOUBLE_EQ(tp_drift_s(c, 2, 1.0), 0.1);
  // The last of 4 normals comes 1.049 deviations above the mean (Blom), of 2 1 / sqrt(pi).
  EXPECT_NEAR(tp_drift_s(c, 4, 1.0), 0.1 * 1.049 * std::sqrt(M_PI), 1e-3);
}

TEST(Tp, a_micro_batch_adds_layers_loss_and_drift) {
  Cluster c = flat();
  Layout l;
  l.tp = 2;
  const StageShape s = stage_shape(gpt(), l, c, 0);
  // 5 all-reduces of 8192 bytes each way (2 layers x 2, and the embedding or the head), and
  // the loss's 3 x 128 bytes in forward.
  TpTime t = micro_batch_tp(s, l, c, ComputeTime{});
  EXPECT_DOUBLE_EQ(t.forward, (5 * 8192 + 384) * 1e-9);
  EXPECT_DOUBLE_EQ(t.seconds, (10 * 8192 + 384) * 1e-9);
  // A drift of 0.1 of a compute of 1 ms, the forward's quarter of it with the forward.
  c.sync_fraction = 0.1;
  ComputeTime compute;
  compute.compute = 1e-3, compute.forward = 0.25e-3;
  t = micro_batch_tp(s, l, c, compute);
  EXPECT_NEAR(t.forward, (5 * 8192 + 384) * 1e-9 + 0.25e-4, 1e-18);
  EXPECT_NEAR(t.seconds, (10 * 8192 + 384) * 1e-9 + 1e-4, 1e-18);
  EXPECT_EQ(micro_batch_tp(s, Layout{}, c, compute).seconds, 0.0);
}

TEST(AllToAll, moe_layers_exchange_counts_and_rows) {
  Layout l;
  l.dp = 2, l.ep = 2;
  // Over 2 ranks at 1 GB/s, an all-to-all of X bytes a rank sends X / 2. Rows: 32 tokens x
  // k 2 x 64 x 4 bytes = 16384; counts: 4 experts x 8 bytes. Forward: counts, rows there
  // and back; backward: both gradients back. Two MoE layers.
  Traffic t = micro_batch_all_to_all(stage_shape(moe(), l, flat(), 0), l, flat());
  EXPECT_DOUBLE_EQ(t.seconds, 2 * (4 * 8192 + 16) * 1e-9);
  EXPECT_DOUBLE_EQ(t.bytes, 2 * (4 * 16384 + 32) / 2.0);
  // Recomputed, the forward's counts and rows go twice.
  l.checkpointing = true;
  t = micro_batch_all_to_all(stage_shape(moe(), l, flat(), 0), l, flat());
  EXPECT_DOUBLE_EQ(t.seconds, 2 * (6 * 8192 + 2 * 16) * 1e-9);
  EXPECT_EQ(
      micro_batch_all_to_all(stage_shape(moe(), Layout{}, flat(), 0), Layout{}, flat()).seconds,
      0.0);
}

TEST(AllToAll, the_busiest_ranks_experts_keep_the_others_waiting) {
  Layout l;
  l.dp = 2, l.ep = 2;
  // Loads spread by 0.5 over 2 experts a rank: 0.5 / sqrt(2); the busier of 2 ranks is
  // 1 / sqrt(pi) of that above the mean, over forward and backward (3 x the experts'
  // forward of 2 x 32 x 2 x 2 x 24576 FLOPs at 1 TFLOP/s).
  const double expert_s = 3 * 6291456e-12;
  const double wait = 0.5 / std::sqrt(2.0) / std::sqrt(M_PI) * expert_s;
  EXPECT_NEAR(expert_wait_s(stage_shape(moe(), l, flat(), 0), l), wait, 1e-18);
  // The two ranks computing at once slow each other by half again.
  Cluster c = flat();
  c.contention = {{2.0, 1.5}};
  EXPECT_NEAR(expert_wait_s(stage_shape(moe(), l, c, 0), l), 1.5 * wait, 1e-18);
  EXPECT_EQ(expert_wait_s(stage_shape(moe(), Layout{}, c, 0), Layout{}), 0.0);
}

TEST(Ring, transfers_hide_behind_half_blocks) {
  Cluster c = flat();
  c.dp_overlap = 0.5;
  Layout l;
  l.cp = 2;
  // Keys and values: 2 x 16 tokens x 64 x 4 bytes = 8192, 8.192 us a step; a half block's
  // products 16 x 2 s' h = 32768 FLOPs, 32.768 ns (backward 2.5 times).
  const double x = 8.192e-6, half = 32.768e-9;
  Traffic t = micro_batch_ring(stage_shape(gpt(), l, c, 0), l, c);
  const double fwd = x - 0.5 * half, bwd = x - 0.5 * 2.5 * half;
  // Two layers: cp - 1 steps forward, 2 cp - 2 backward, and the gradients' last step.
  EXPECT_NEAR(t.seconds, 2 * (fwd + 2 * bwd + x), 1e-18);
  EXPECT_DOUBLE_EQ(t.bytes, 2 * 4 * 8192.0);
  // A calibrated ring wait is all that shows, on every transfer.
  c.ring_sync_us = 10;
  t = micro_batch_ring(stage_shape(gpt(), l, c, 0), l, c);
  EXPECT_NEAR(t.seconds, 2 * 4 * (x + 10e-6), 1e-18);
  EXPECT_EQ(micro_batch_ring(stage_shape(gpt(), Layout{}, c, 0), Layout{}, c).seconds, 0.0);
}

}  // namespace
}  // namespace trident::plan
