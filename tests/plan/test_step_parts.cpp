// The parts of a step beyond one micro-batch, each against its formula worked by hand: the
// stages' pace, the pipeline's sends and bubble, the dp reductions, the optimizer, the tier.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include "hand_worked.h"      // hand_gpt, flat
#include "plan/step_parts.h"  // the step's parts

namespace trident::plan {
namespace {

PlanModel gpt() { return testing::hand_gpt(); }

using testing::flat;

/// Over 2 ranks at 1 GB/s an all-reduce of X bytes takes X ns, a reduce-scatter or an
/// all-gather X / 2.
const Link kPair{1e9, 0, false};

TEST(StagePace, the_slowest_stage_sets_the_pace) {
  Layout l;
  l.pp = 2;
  const StagePace p = stage_pace(gpt(), l, flat());
  // Forward FLOPs of 32 tokens: stage 0 one layer (2 x 12 h^2 + 4 s h a token), stage 1 the
  // layer and the head (2 V h); a micro-batch's compute three forwards.
  const double stage0 = 32 * 106496.0, stage1 = 32 * (106496.0 + 32768);
  EXPECT_DOUBLE_EQ(p.slow.compute, 3 * stage1 * 1e-12);
  EXPECT_DOUBLE_EQ(p.mean_compute, 3 * (stage0 + stage1) / 2 * 1e-12);
  ASSERT_EQ(p.work.size(), 2u);
  EXPECT_DOUBLE_EQ(p.work[0].forward, stage0 * 1e-12);
  EXPECT_DOUBLE_EQ(p.work[1].backward, 2 * stage1 * 1e-12);
  // The most weights: stage 0's layer (12 h^2 + 13 h), token and position embeddings.
  EXPECT_EQ(p.psi, 12 * 64 * 64 + 13 * 64 + 256 * 64 + 32 * 64);
  EXPECT_EQ(p.experts, 0);
}

TEST(Pipeline, stage_work_waits_aside_and_zb_h1_splits_the_backward) {
  MicroBatchTime t;
  t.compute = 10, t.forward = 3, t.backward = 5, t.tp = 2, t.tp_forward = 0.5, t.ep = 0.25;
  t.cp = 0.125;
  PlanModel m = gpt();
  StageWork w = stage_work(m, t);
  EXPECT_EQ(w.forward, 3);
  EXPECT_EQ(w.backward, 7);  // the rest of the compute, recomputation included
  EXPECT_EQ(w.forward_wait, 0.875);
  EXPECT_EQ(w.backward_wait, 1.5);
  EXPECT_EQ(w.input, 0);
  m.schedule = "zb-h1";
  w = stage_work(m, t);
  EXPECT_EQ(w.backward, 5);  // the weight half
  EXPECT_EQ(w.input, 2);     // the input half: the rest beyond forward and weight half
}

TEST(Pipeline, sends_activations_gradients_and_the_tied_embedding) {
  Layout l;
  EXPECT_EQ(pipeline_sends_s(gpt(), l, flat(), 8), 0.0);
  l.pp = 2;
  // Each micro-batch's 32 x 64 fp32 activation forward and its gradient back, 8.192 us
  // each; the embedding's 256 x 64 gradient all-reduced between the ends.
  const double sends = 8 * 2 * 8.192e-6, embedding = 256 * 64 * 4e-9;
  EXPECT_NEAR(pipeline_sends_s(gpt(), l, flat(), 8), sends + embedding, 1e-18);
  // Interleaved, two chunks a rank: each micro-batch crosses between ranks twice more.
  PlanModel m = gpt();
  m.schedule = "interleaved-1f1b", m.virtual_stages = 2;
  EXPECT_NEAR(pipeline_sends_s(m, l, flat(), 8), 2 * sends + embedding, 1e-18);
}

TEST(Pipeline, bubble_is_the_simulated_schedule_beyond_compute_and_waits) {
  PlanModel m = gpt();
  m.global_batch = 4;  // 4 micro-batches of 1
  Layout l;
  l.pp = 2;
  StagePace pace;
  pace.work = {StageWork{1, 2, 0, 0, 0}, StageWork{1, 2, 0, 0, 0}};
  // 1F1B over 2 equal stages of forward 1 and backward 2: (m + p - 1) (F + B) = 15, of
  // which each stage computes 12.
  EXPECT_DOUBLE_EQ(pipeline_s(m, l, flat(), pace.work), 15.0);
  TimeBreakdown t;
  t.compute = 12;
  EXPECT_DOUBLE_EQ(bubble_s(m, l, flat(), pace, t), 3.0);
  t.tp = 1;  // charged apart
  EXPECT_DOUBLE_EQ(bubble_s(m, l, flat(), pace, t), 2.0);
  t.tp = 4;  // never below nothing
  EXPECT_EQ(bubble_s(m, l, flat(), pace, t), 0.0);
  EXPECT_EQ(bubble_s(m, Layout{}, flat(), pace, TimeBreakdown{}), 0.0);
}

TEST(Dp, exposed_is_what_does_not_fit_behind_the_backward) {
  // 10 s, the last bucket's 2 after backward; 8 could hide, 5 fit, half of those hide.
  EXPECT_DOUBLE_EQ(exposed(10, 2, 5, 0.5), 7.5);
  EXPECT_DOUBLE_EQ(exposed(10, 2, 20, 1.0), 2.0);
  EXPECT_DOUBLE_EQ(exposed(1, 2, 5, 1.0), 1.0);
}

TEST(Dp, reductions_by_zero_stage) {
  PlanModel m = gpt();
  m.bucket_size = 250000;  // 1 MB buckets of a 4 MB buffer
  Cluster c = flat();
  c.dp_overlap = 0.5;
  c.all_reduce_overlap = 0.25;
  const ReducedBuffer buffer{1e6, 2, kPair};
  Layout l;
  // Stage 0: an all-reduce of 4 ms, 3 of them before the last bucket, 1 behind the
  // backward, a quarter of that hidden (all_reduce_overlap).
  EXPECT_NEAR(reductions_s(m, l, c, buffer, 1e-3, 4), 4e-3 - 0.25e-3, 1e-15);
  // Stage 1: a reduce-scatter of 2 ms, 1.5 before the last bucket, half of 1 hidden; then
  // the parameters' all-gather of 2 ms.
  l.zero = 1;
  EXPECT_NEAR(reductions_s(m, l, c, buffer, 1e-3, 4), 1.5e-3 + 2e-3, 1e-15);
  // Stage 2: the reduce-scatter every micro-batch.
  l.zero = 2;
  EXPECT_NEAR(reductions_s(m, l, c, buffer, 1e-3, 4), 4 * 1.5e-3 + 2e-3, 1e-15);
  // Stage 3: gathers before forward and backward of each micro-batch (and the recomputed
  // forward), each 2 ms of which half of what fits in half the backward hides.
  l.zero = 3;
  const double gather = 2e-3 - 0.5 * 0.5e-3;
  EXPECT_NEAR(reductions_s(m, l, c, buffer, 1e-3, 4), 4 * 1.5e-3 + 8 * gather, 1e-15);
  l.checkpointing = true;
  EXPECT_NEAR(reductions_s(m, l, c, buffer, 1e-3, 4), 4 * 1.5e-3 + 12 * gather, 1e-15);
  m.zero3_reshard_after_forward = false;
  EXPECT_NEAR(reductions_s(m, l, c, buffer, 1e-3, 4), 4 * 1.5e-3 + gather, 1e-15);
  EXPECT_EQ(reductions_s(m, l, c, ReducedBuffer{1e6, 1, kPair}, 1e-3, 4), 0.0);
}

TEST(Dp, dense_buffer_over_dp_and_experts_over_expert_dp) {
  Layout l;
  l.dp = 4, l.ep = 2;
  StagePace pace;
  pace.psi = 1000000, pace.experts = 200000;
  // Buckets hold each buffer whole: nothing hides. Dense: 3.2 MB over 4, Rabenseifner's
  // 2 x 3/4 of it; experts: 0.8 MB over 2.
  EXPECT_NEAR(dp_reductions_s(gpt(), l, flat(), pace, 8), 1.5 * 3.2e-3 + 0.8e-3, 1e-15);
}

TEST(Dp, scalar_collectives_every_step) {
  Cluster c = flat();
  c.latency_us = 1;
  Layout l;
  EXPECT_EQ(scalar_collectives(l, c).dp, 0.0);
  l.dp = 2, l.pp = 2;
  // 8 bytes: the norm over 4 ranks by recursive doubling, 2 x (8 ns + 1 us); the loss over
  // dp 2 in one round (8 ns + 1 us); the loss to the other stage by a gather (4 ns + 1 us).
  const ScalarCollectives s = scalar_collectives(l, c);
  EXPECT_NEAR(s.dp, 2 * 1.008e-6 + 1.008e-6, 1e-18);
  EXPECT_NEAR(s.pp, 1.004e-6, 1e-18);
}

TEST(Dp, zero2_copies_its_gradients_every_micro_batch) {
  Cluster c = flat();
  Layout l;
  l.dp = 2, l.zero = 2;
  StagePace pace;
  pace.psi = 1000;
  EXPECT_EQ(zero2_copies_s(gpt(), l, c, pace, 4), 0.0);  // no memory rate
  c.memory_gbps = 1;
  EXPECT_DOUBLE_EQ(shard_elements(l, pace), 500.0);
  // Gradients into buckets (read and write, 2 x 4000 bytes) and the shard added into its
  // own (3 x 2000), each of 4 micro-batches.
  EXPECT_DOUBLE_EQ(zero2_copies_s(gpt(), l, c, pace, 4), 4 * 14000e-9);
  l.zero = 1;
  EXPECT_EQ(zero2_copies_s(gpt(), l, c, pace, 4), 0.0);
  l.dp = 4, l.ep = 2, l.zero = 2;
  pace.psi = 1200, pace.experts = 200;
  EXPECT_DOUBLE_EQ(shard_elements(l, pace), 1000 / 4.0 + 200 / 2.0);
}

TEST(Optimizer, adamw_passes_over_the_shard) {
  Cluster c = flat();
  c.memory_gbps = 1;
  Layout l;
  StagePace pace;
  pace.psi = 1000;
  // fp32, ZeRO 0: the norm (4000 bytes), 24 passes (96000), the gradient zeroed (4000).
  EXPECT_NEAR(optimizer_s(gpt(), l, c, pace), 104000e-9, 1e-18);
  // Two ranks on one core take twice as long.
  c.machine_cores = 1;
  l.dp = 2;
  EXPECT_NEAR(optimizer_s(gpt(), l, c, pace), 2 * 104000e-9, 1e-18);
  c.machine_cores = 0;
  // A calibrated update of 2 ns an element replaces the 24 passes.
  c.adamw_ns_per_element = 2;
  l.dp = 1;
  EXPECT_NEAR(optimizer_s(gpt(), l, c, pace), 2e-6 + 8000e-9, 1e-18);
  // bf16, ZeRO 2 over 2: a shard of 500, the master's rounding (4 + 2 bytes), the fp32
  // gradient shard.
  c.adamw_ns_per_element = 0;
  PlanModel m = gpt();
  m.precision = "bf16";
  l.dp = 2, l.zero = 2;
  EXPECT_NEAR(optimizer_s(m, l, c, pace), (2000 + 48000 + 3000 + 2000) * 1e-9, 1e-18);
  c.memory_gbps = 0;
  EXPECT_EQ(optimizer_s(m, l, c, pace), 0.0);
}

TEST(Tier, what_the_disk_adds_beyond_its_windows) {
  PlanModel m = gpt();
  m.offload_optimizer = "nvme";
  Cluster c = flat();
  c.disk_read_gbps = 1, c.disk_write_gbps = 0.5;
  c.dp_overlap = 0.5;
  TimeBreakdown t;
  t.optimizer = 1e-3, t.compute = 2e-3;
  Layout l;
  l.zero = 1;
  // Both fp32 moments of 118528 weights (948224 bytes) read and written: the writes take
  // 1.896 ms, 1 of it behind the AdamW step.
  EXPECT_NEAR(tier_s(m, l, c, t), 1.896448e-3 - 1e-3, 1e-15);
  // Two stages: stage 0's 68416 weights, the larger.
  l.pp = 2;
  EXPECT_NEAR(tier_s(m, l, c, t), 68416 * 8 / 0.5e9 - 1e-3, 1e-15);
  // ZeRO 2 over dp 2: the step hides the stream; each of 4 micro-batches writes the
  // gradient shard (237056 bytes), the last three reading it first; the writes hide
  // behind dp_overlap of the compute.
  t.optimizer = 1;
  l.pp = 1, l.zero = 2, l.dp = 2;
  EXPECT_NEAR(tier_s(m, l, c, t), 3 * 237056e-9 + 4 * 237056 / 0.5e9 - 0.5 * 2e-3, 1e-15);
  c.disk_read_gbps = c.disk_write_gbps = 0;
  EXPECT_EQ(tier_s(m, l, c, t), 0.0);
}

}  // namespace
}  // namespace trident::plan
